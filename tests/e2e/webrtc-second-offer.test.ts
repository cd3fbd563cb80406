// A second offer for a session that already has a call (docs/browsers.md, "WebRTC"; decisions.md, "WebRTC"):
// it replaces the older call, as the newest attachment wins on /v1/realtime. The real processes; werift
// browser stand-ins (@s2s/webrtc/testing) make the two calls with the same `ek_` secret.
import t from 'tap';
import type { VoiceSession } from '@s2s/contract';
import { eventually } from '@s2s/testing';
import { expectedCents } from './bill.js';
import { api, expectCharged, startStack } from './stack.js';
import { eventTypes, hangUp, mintCall, offerCall } from './webrtc.js';

t.test('a second offer for the same session replaces the older call; the session is billed once', async (t) => {
  const stack = await startStack(t, { relay: { WEBRTC_ANNOUNCED_ADDRESSES: '127.0.0.1' } });
  const { key, rate, sessionId, secret } = await mintCall(stack);

  const call = async () => {
    const made = await offerCall(t, stack, secret);
    t.equal(made.status, 201, 'the offer is answered');
    t.equal(made.location, `/v1/realtime/calls/${sessionId}`, 'for the same session');
    return made.peer;
  };

  // The first call speaks half a second, then silence: the relay measures it before the second offer.
  const first = await call();
  await first.speak(500);
  await first.speak(500, 0);

  const second = await call();
  // The older call is closed from the relay's side: its channel and its connection end.
  await eventually(
    () => [first.channel.readyState, first.pc.connectionState],
    ([channel, connection]) => channel === 'closed' && connection !== 'connected',
    10_000,
  );
  t.pass('the first call was closed');
  const heardByFirst = first.messages.length;

  // The newer call carries the session: a spoken turn and its echo.
  await second.speak(1000);
  const silence = second.speak(3000, 0);
  await eventually(
    () => eventTypes(second),
    (types) => types.includes('output_audio_buffer.stopped'),
    10_000,
  );
  await silence;
  t.ok(second.received.length * 20 >= 900, `the echo played on the second call's track: ${second.received.length} packets`);
  t.equal(first.messages.length, heardByFirst, 'nothing more reached the first call');

  const hung = await hangUp(stack, sessionId, key.key);
  t.equal(hung.status, 200);
  const settled = await eventually(
    () => api<VoiceSession>(stack, 'GET', `/v1/voice/sessions/${sessionId}`, { key: key.key }),
    (r) => r.body.status === 'completed' && r.body.billing.reserved_cents === 0,
    15_000,
  );
  const usage = settled.body.usage;
  // Both calls' audio, measured on their tracks: the first's second of input, the second's four.
  t.ok(usage.audio_in_ms >= 4800 && usage.audio_in_ms <= 5200, `audio_in_ms ${usage.audio_in_ms}: both calls' tracks`);
  t.ok(usage.audio_out_ms >= 900, `audio_out_ms ${usage.audio_out_ms}: the echo`);
  const cents = expectedCents(rate, usage);
  t.equal(usage.billed_cents, cents, `billed to the cent (${cents})`);
  await expectCharged(t, stack, key.wallet_id, 1000, cents);
});
