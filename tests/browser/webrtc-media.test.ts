// The WebRTC media termination (@s2s/webrtc) against a real browser: Chromium offers its microphone (a WAV)
// and the `oai-events` channel, the endpoint answers with ICE-lite on its one UDP port, decodes the Opus it
// receives, and plays it back paced in real time; the page's remote track must count the packets it played.
import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import t from 'tap';
import { WebRtcEndpoint } from '@s2s/webrtc';
import { eventually } from '@s2s/testing';
import { launchChromium, skipWithoutChromium, speechWav } from './chromium.js';

interface PageState {
  connection: string;
  messages: string[];
  inbound: { packetsReceived: number; totalSamplesReceived: number; jitter: number; packetsLost: number } | null;
  outbound: { packetsSent: number } | null;
}

const PAGE = `<!doctype html><meta charset="utf-8"><script>
window.state = { connection: 'new', messages: [], inbound: null, outbound: null };
window.start = async () => {
  const pc = new RTCPeerConnection();
  window.pc = pc;
  pc.onconnectionstatechange = () => { window.state.connection = pc.connectionState; };
  const audio = document.createElement('audio'); audio.autoplay = true; document.body.append(audio);
  pc.ontrack = (e) => { audio.srcObject = e.streams[0] ?? new MediaStream([e.track]); };
  // As @openai/agents-realtime does: the channel first, then the microphone (the application section leads).
  const dc = pc.createDataChannel('oai-events');
  const mic = await navigator.mediaDevices.getUserMedia({ audio: true });
  pc.addTrack(mic.getAudioTracks()[0]);
  dc.onopen = () => dc.send(JSON.stringify({ type: 'hello' }));
  dc.onmessage = (m) => window.state.messages.push(m.data);
  await pc.setLocalDescription(await pc.createOffer());
  const answer = await window.answerOffer(pc.localDescription.sdp);
  await pc.setRemoteDescription({ type: 'answer', sdp: answer });
};
window.poll = async () => {
  const stats = await window.pc.getStats();
  stats.forEach((s) => {
    if (s.type === 'inbound-rtp' && s.kind === 'audio') window.state.inbound = { packetsReceived: s.packetsReceived, totalSamplesReceived: s.totalSamplesReceived, jitter: s.jitter, packetsLost: s.packetsLost };
    if (s.type === 'outbound-rtp' && s.kind === 'audio') window.state.outbound = { packetsSent: s.packetsSent };
  });
  return window.state;
};
</script>`;

t.test('Chromium ↔ @s2s/webrtc: ICE-lite on one port, Opus both ways, oai-events', { skip: skipWithoutChromium() }, async (t) => {
  const ep = await WebRtcEndpoint.start({ port: 0, announcedAddresses: ['127.0.0.1'] });
  t.teardown(() => ep.close());
  const server = createServer((_req, res) => res.setHeader('content-type', 'text/html').end(PAGE));
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  t.teardown(() => new Promise((r) => server.close(r)));

  const browser = await launchChromium(t, { microphoneWav: speechWav({ leadMs: 100, speechMs: 2000, tailMs: 500 }) });
  const page = await browser.newPage();

  const decoded: Buffer[] = [];
  const messages: string[] = [];
  let callState = '';
  await page.exposeFunction('answerOffer', async (offer: string) => {
    const { sdp, call } = await ep.answer(offer);
    call.setHandlers({
      audio: (pcm) => {
        decoded.push(pcm);
        call.playAudio(pcm); // the echo: what Chromium's microphone said comes back on its remote track
      },
      message: (m) => {
        messages.push(m.toString());
        call.send(JSON.stringify({ type: 'session.created' }));
      },
      state: (s) => {
        callState = s;
      },
    });
    return sdp;
  });
  await page.goto(`http://127.0.0.1:${(server.address() as AddressInfo).port}/`);
  await page.evaluate('window.start()');

  const poll = async () => (await page.evaluate('window.poll()')) as PageState;
  t.equal((await eventually(poll, (s) => s.connection === 'connected', 15_000)).connection, 'connected');
  // Chromium's side can report connected a moment before the endpoint has read its last DTLS flight.
  t.equal(
    await eventually(
      () => callState,
      (s) => s === 'connected',
      5000,
    ),
    'connected',
  );
  await eventually(
    () => messages.length,
    (n) => n > 0,
    5000,
  );
  t.same(JSON.parse(messages[0]!), { type: 'hello' });

  await new Promise((r) => setTimeout(r, 2500));
  const s = (await page.evaluate('window.poll()')) as PageState;
  t.same(
    s.messages.map((m) => JSON.parse(m) as unknown),
    [{ type: 'session.created' }],
    'the page got the server event',
  );
  const pcm = Buffer.concat(decoded);
  t.ok(pcm.length / 48 > 1500, `decoded ${Math.round(pcm.length / 48)} ms of Chromium's microphone`);
  t.ok(s.inbound !== null && s.inbound.packetsReceived > 60, `Chromium received ${s.inbound?.packetsReceived} packets of the echo`);
  t.ok(s.inbound !== null && s.inbound.totalSamplesReceived > 48_000, `and played ${s.inbound?.totalSamplesReceived} samples`);
  t.equal(ep.counters.dtlsFailures, 0);
  t.comment(
    `chromium jitter ${s.inbound?.jitter} s, lost ${s.inbound?.packetsLost}; endpoint stats ${JSON.stringify(ep.counters.datagramsDropped)}`,
  );

  await page.evaluate('window.pc.close()');
  t.equal(
    await eventually(
      () => callState,
      (c) => c === 'closed',
      5000,
    ),
    'closed',
    'the page closing ends the call',
  );
});
