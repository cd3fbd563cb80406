// Issue 8, item 1: NATS down past the relay's old final-checkpoint retry window (about 34 s), the end requested
// during the outage. No usage a live relay measured may be lost: the bill is all the audio sent and received.
import t from 'tap';
import { checkInvariants, faultFixture, notSettledOnce, turn } from '@s2s/chaos';

const SESSIONS = 4;
const OUTAGE_MS = 48_000;

t.setTimeout(300_000);

t.test('NATS stopped for 48 s, end requested during the outage: every millisecond sent and received is billed', async (t) => {
  const { stack, api, sessions } = await faultFixture(t, SESSIONS, { relays: 1 });
  t.ok((await Promise.all(sessions.map(turn))).every(Boolean), 'a first turn answered with the bus up');

  await stack.nats.stop();
  const downAt = Date.now();
  const during = await Promise.all(
    sessions.map(async (s) => {
      const answered = (await turn(s)) && (await turn(s));
      const endStatus = await s.end(api, 15_000);
      return { answered, endStatus };
    }),
  );
  t.ok(
    during.every((d) => d.answered),
    'two more turns answered while NATS is down',
  );
  t.ok(
    during.every((d) => d.endStatus !== 200),
    `the end cannot settle during the outage (${during.map((d) => d.endStatus).join(', ')})`,
  );
  await new Promise((r) => setTimeout(r, Math.max(0, OUTAGE_MS - (Date.now() - downAt))));
  await stack.nats.start();

  for (const s of sessions) {
    const final = await s.endAndSettle(api, 120_000);
    t.ok(final, `${s.label} settled`);
    if (!final) continue;
    t.equal(final.status, 'completed', `${s.label} completed`);
    t.equal(final.usage.audio_in_ms, s.sentInMs, `${s.label}: billed input = the ${s.sentInMs} ms sent`);
    t.equal(
      final.usage.audio_out_ms,
      Math.round(s.receivedOutMs),
      `${s.label}: billed output = the ${Math.round(s.receivedOutMs)} ms received`,
    );
  }
  t.same(await notSettledOnce(stack, sessions), [], 'each session settled exactly once');
  t.same(await checkInvariants(stack), [], 'ledger invariants hold');
  t.same(stack.crashes, [], 'no process crashed');
});
