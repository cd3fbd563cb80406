// Issue 8, item 3: PostgreSQL down when the first audio arrives. The session's input was accepted, so it is
// `active` before its end is decided: it ends `completed` (not `cancelled`), billed for all its audio.
import t from 'tap';
import { checkInvariants, faultFixture, notSettledOnce, turn } from '@s2s/chaos';

const SESSIONS = 4;
const OUTAGE_MS = 5000;

t.setTimeout(240_000);

t.test('PostgreSQL stopped at the first input: the session ends completed, billed for the audio sent and received', async (t) => {
  const { stack, api, sessions } = await faultFixture(t, SESSIONS, { relays: 1 });
  await stack.pgsql.stop('immediate');
  const downAt = Date.now();
  t.ok((await Promise.all(sessions.map(turn))).every(Boolean), 'the first turn answered while the store is down');
  await new Promise((r) => setTimeout(r, Math.max(0, OUTAGE_MS - (Date.now() - downAt))));
  // The reproduction: the end comes right after the store is back, whatever the relay retries.
  await stack.pgsql.start();

  for (const s of sessions) {
    const final = await s.endAndSettle(api, 60_000);
    t.ok(final, `${s.label} settled`);
    if (!final) continue;
    t.equal(final.status, 'completed', `${s.label} completed, not cancelled`);
    t.equal(final.usage.audio_in_ms, s.sentInMs, `${s.label}: billed input = the ${s.sentInMs} ms sent`);
    t.equal(
      final.usage.audio_out_ms,
      Math.round(s.receivedOutMs),
      `${s.label}: billed output = the ${Math.round(s.receivedOutMs)} ms received`,
    );
    t.ok(final.usage.billed_cents > 0, `${s.label} billed ${final.usage.billed_cents} cents`);
  }
  t.same(await notSettledOnce(stack, sessions), [], 'each session settled exactly once');
  t.same(await checkInvariants(stack), [], 'ledger invariants hold');
  t.same(stack.crashes, [], 'no process crashed');
});
