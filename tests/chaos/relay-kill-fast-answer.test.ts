// Issue 8 leftover: a relay SIGKILLed right after a fast answer (the whole reply arrives in a burst, well
// inside one checkpoint interval) must still lose at most 250 ms of output: the relay publishes a checkpoint
// as soon as unpublished audio reaches 250 ms, not only on its 250 ms timer.
import t from 'tap';
import { CHUNK_MS, checkInvariants, faultFixture, notSettledOnce } from '@s2s/chaos';

const SESSIONS = 3;
const BOUND_MS = 250;

t.setTimeout(240_000);

t.test('a relay SIGKILLed right after a fast answer: at most 250 ms of its output lost', async (t) => {
  const { stack, api, sessions } = await faultFixture(t, SESSIONS, { relays: 2 });
  // The local provider answers a turn with its own audio in one burst of deltas, then response.done: the
  // kill lands at once, with no timer tick in between to publish what the answer added.
  const answered = sessions.map((s) => s.nextDone(8000));
  await Promise.all(sessions.map((s) => s.speak(1000, 700)));
  t.ok((await Promise.all(answered)).every(Boolean), 'every session answered');
  await stack.relays[0]!.kill();
  await Promise.all(sessions.map((s) => s.socketClosed(5000)));
  const received = sessions.map((s) => Math.round(s.receivedOutMs));
  t.ok(
    received.every((ms) => ms >= 900),
    `the answers arrived before the kill: ${received.join(', ')} ms`,
  );

  for (const [i, s] of sessions.entries()) {
    const final = await s.endAndSettle(api, 60_000);
    t.ok(final, `${s.label} settled`);
    if (!final) continue;
    const lostOut = received[i]! - final.usage.audio_out_ms;
    const lostIn = s.sentInMs - final.usage.audio_in_ms;
    t.ok(lostOut >= 0 && lostOut <= BOUND_MS, `${s.label}: ${lostOut} ms of output lost (of ${received[i]} ms received)`);
    t.ok(lostIn >= 0 && lostIn <= BOUND_MS + CHUNK_MS, `${s.label}: ${lostIn} ms of input lost (of ${s.sentInMs} ms sent)`);
  }
  t.same(await notSettledOnce(stack, sessions), [], 'each session settled exactly once');
  t.same(await checkInvariants(stack), [], 'ledger invariants hold');
  t.same(stack.crashes, [], 'nothing crashed but the relay we killed');
});
