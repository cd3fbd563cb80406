// A relay that dies mid-call (issue 27; docs/browsers.md, "WebRTC", 4): the call's media ends with it, a peer
// never reattaches, so once the relay's lease has expired the gateway ends the session itself (`failed`, end
// cause `relay_lost`) and billing settles it exactly once from what was measured, its last checkpoint. The
// real processes; a werift browser stand-in (@s2s/webrtc/testing) makes the call.
import t from 'tap';
import { VoiceSession } from '@s2s/contract';
import { sleep } from '@s2s/testing';
import { expectedCents } from './bill.js';
import { api, expectCharged, startStack } from './stack.js';
import { mintCall, offerCall } from './webrtc.js';

t.test('a relay killed mid-call (SIGKILL): the gateway ends the call, settled once from its last checkpoint', async (t) => {
  const stack = await startStack(t, { relay: { WEBRTC_ANNOUNCED_ADDRESSES: '127.0.0.1' } });
  const { key, rate, sessionId, secret } = await mintCall(stack);
  const { peer, status } = await offerCall(t, stack, secret);
  t.equal(status, 201);

  // A turn (tone, then silence on the track) until billing has folded past 3 s of input and the echo: the relay
  // dies with measured, unsettled usage.
  const pool = stack.db.db.pool;
  const folded = async () =>
    (
      await pool.query<{ final: boolean; audio_in_ms: number; audio_out_ms: number }>(
        `SELECT final, audio_in_ms::int AS audio_in_ms, audio_out_ms::int AS audio_out_ms
           FROM session_attachments WHERE session_id = $1`,
        [sessionId],
      )
    ).rows[0] ?? { final: false, audio_in_ms: 0, audio_out_ms: 0 };
  await peer.speak(800);
  let before = await folded();
  for (let i = 0; i < 20 && (before.audio_in_ms < 3000 || before.audio_out_ms === 0); i++) {
    await peer.speak(500, 0);
    before = await folded();
  }
  t.ok(before.audio_in_ms >= 3000, `billing folded ${before.audio_in_ms} ms of input before the kill`);
  t.ok(before.audio_out_ms > 0 && peer.received.length > 0, `the echo played on the track (${peer.received.length} packets)`);

  stack.relay.child.kill('SIGKILL');
  const killedAt = Date.now();
  t.equal(await stack.relay.exited, null, 'killed, no clean exit');
  // The page goes on talking into the void for a while: none of that is measured or billed.
  const talking = peer.speak(2000, 0);

  // Nobody ends it: the gateway does. Bound: the lease TTL (3 s here) + a sweep (0.5 s) + billing's grace for a
  // gone relay (1.5 s), with room for a loaded machine.
  const BOUND_MS = 15_000;
  let settled: VoiceSession | undefined;
  while (Date.now() - killedAt < BOUND_MS + 5000) {
    const got = VoiceSession.parse((await api(stack, 'GET', `/v1/voice/sessions/${sessionId}`, { key: key.key })).body);
    if (got.status !== 'ready' && got.status !== 'active' && got.billing.reserved_cents === 0) {
      settled = got;
      break;
    }
    await sleep(200);
  }
  const tookMs = Date.now() - killedAt;
  await talking;
  t.ok(settled, 'the session ended and settled without the application');
  t.ok(tookMs <= BOUND_MS, `settled ${tookMs} ms after the kill (bound ${BOUND_MS} ms)`);
  t.equal(settled?.status, 'failed', 'a call cut by the gateway is failed');
  const cause = await pool.query<{ end_cause: string }>('SELECT end_cause FROM voice_sessions WHERE id = $1', [sessionId]);
  t.equal(cause.rows[0]?.end_cause, 'relay_lost', 'the end cause names the lost relay');

  const last = await folded();
  t.equal(last.final, false, 'no final checkpoint ever came');
  t.ok(last.audio_in_ms >= before.audio_in_ms, `the last checkpoint: ${last.audio_in_ms} ms of input`);
  const usage = settled!.usage;
  t.equal(usage.audio_in_ms, last.audio_in_ms, 'audio_in_ms: the last checkpoint, what the track carried');
  t.equal(usage.audio_out_ms, last.audio_out_ms, 'audio_out_ms: the last checkpoint');
  const cents = expectedCents(rate, usage);
  t.ok(cents > 0, 'the call cost something');
  t.equal(usage.billed_cents, cents, `billed to the cent (${cents})`);

  // Settled once: the application's end after the fact changes nothing.
  const again = await api<VoiceSession>(stack, 'POST', `/v1/voice/sessions/${sessionId}/end`, { key: key.key });
  t.equal(again.status, 200);
  t.equal(VoiceSession.parse(again.body).usage.billed_cents, cents, 'an end request after it changes nothing');
  const ledger = await pool.query('SELECT 1 FROM ledger_entries WHERE session_id = $1', [sessionId]);
  t.equal(ledger.rowCount, 1, 'one charge');
  await expectCharged(t, stack, key.wallet_id, 1000, cents);
});
