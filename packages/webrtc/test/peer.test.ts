// WebRtcPeer, the calling side of `s2s call --webrtc`, against the media termination in-process: its offer is
// what the endpoint takes, PCM goes up as paced Opus and comes back decoded, events travel on oai-events, and a
// call the endpoint closes closes the peer (connection included, so a program that placed it can exit).
import t from 'tap';
import { WebRtcEndpoint, WebRtcPeer } from '../src/index.js';
import { rms, waitFor, zeroCrossingHz } from '../src/testing.js';

/** PCM16 24 kHz mono: `ms` of a 440 Hz tone. */
function tone(ms: number): Buffer {
  const n = ms * 24;
  const pcm = Buffer.alloc(n * 2);
  for (let i = 0; i < n; i++) pcm.writeInt16LE(Math.round(8000 * Math.sin((2 * Math.PI * 440 * i) / 24_000)), 2 * i);
  return pcm;
}

t.test('WebRtcPeer ↔ WebRtcEndpoint: PCM both ways through Opus, events, the far end closing', async (t) => {
  const ep = await WebRtcEndpoint.start({ port: 0, host: '127.0.0.1', announcedAddresses: ['127.0.0.1'] });
  t.teardown(() => ep.close());
  const peer = new WebRtcPeer();
  t.teardown(() => peer.close());
  const heard: Buffer[] = [];
  const messages: string[] = [];
  let closed = 0;
  peer.setHandlers({ audio: (pcm) => heard.push(pcm), message: (m) => messages.push(m), closed: () => closed++ });

  const { sdp, call } = await ep.answer(await peer.offer());
  const received: Buffer[] = [];
  const events: string[] = [];
  call.setHandlers({ audio: (pcm) => received.push(pcm), message: (m) => events.push(m.toString()) });
  await peer.accept(sdp);
  t.ok(peer.isOpen, 'the channel is open once accept resolves');

  peer.send(JSON.stringify({ type: 'response.create' }));
  call.send(JSON.stringify({ type: 'session.created' }));
  await waitFor(() => events.length === 1 && messages.length === 1, 3000, 'events both ways');
  t.same(JSON.parse(events[0]!), { type: 'response.create' });
  t.same(JSON.parse(messages[0]!), { type: 'session.created' });

  const started = performance.now();
  await peer.speak(tone(400));
  const took = performance.now() - started;
  t.ok(took >= 340, `spoken in real time (${Math.round(took)} ms for 400 ms)`);
  await waitFor(() => Buffer.concat(received).length >= 400 * 48, 3000, 'the endpoint decoded the speech');
  const up = Buffer.concat(received);
  t.equal(up.length, 400 * 48, 'every 20 ms packet arrived and decoded: 400 ms of PCM16 24 kHz');
  t.ok(Math.abs(zeroCrossingHz(up.subarray(4800), 24_000) - 440) < 20, 'the tone went up');

  call.playAudio(tone(300));
  call.endAudio();
  await waitFor(() => Buffer.concat(heard).length >= 280 * 48, 3000, 'the peer decoded the answer');
  const down = Buffer.concat(heard);
  t.ok(rms(down) > 1000 && Math.abs(zeroCrossingHz(down.subarray(4800), 24_000) - 440) < 20, 'the tone came down, decoded to 24 kHz');

  await call.close();
  await waitFor(() => closed === 1, 5000, 'the peer saw the call end');
  t.notOk(peer.isOpen);
  await peer.close();
  t.equal(closed, 1, 'closed reported once');
});
