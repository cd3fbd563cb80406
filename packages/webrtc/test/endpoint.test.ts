import { createSocket } from 'node:dgram';
import t, { type Test } from 'tap';
import { Message, classes, methods } from 'werift';
import { SdpOfferError } from '@s2s/core';
import { WebRtcEndpoint, type CallState, type WebRtcCall } from '../src/index.js';
import { BrowserPeer, UdpHop, rms, waitFor, zeroCrossingHz } from '../src/testing.js';

async function endpoint(t: Test, opts: Partial<Parameters<typeof WebRtcEndpoint.start>[0]> = {}): Promise<WebRtcEndpoint> {
  const ep = await WebRtcEndpoint.start({ port: 0, host: '127.0.0.1', announcedAddresses: ['127.0.0.1'], ...opts });
  t.teardown(() => ep.close());
  return ep;
}

async function browser(t: Test, label?: string): Promise<BrowserPeer> {
  const b = new BrowserPeer(label);
  t.teardown(() => b.close());
  return b;
}

function track(call: WebRtcCall) {
  const seen = {
    states: [] as CallState[],
    failure: undefined as string | undefined,
    pcm: [] as Buffer[],
    messages: [] as string[],
    oversize: [] as number[],
    started: 0,
    stopped: 0,
  };
  call.setHandlers({
    audio: (pcm) => seen.pcm.push(pcm),
    message: (m) => seen.messages.push(m.toString()),
    oversize: (n) => seen.oversize.push(n),
    state: (s, f) => {
      seen.states.push(s);
      if (f) seen.failure = f;
    },
    outputStarted: () => seen.started++,
    outputStopped: () => seen.stopped++,
  });
  return seen;
}

t.test('a call: audio both ways through Opus, paced output, the oai-events channel, stats', async (t) => {
  const ep = await endpoint(t);
  const b = await browser(t);
  const { sdp, call } = await ep.answer(await b.offer());
  const seen = track(call);
  t.match(sdp, /a=ice-lite/);
  t.match(sdp, new RegExp(`a=candidate:\\S+ 1 udp \\d+ 127\\.0\\.0\\.1 ${ep.port} typ host`));
  await b.accept(sdp);
  await b.connected();
  await waitFor(() => call.state === 'connected', 5000, 'call connected');

  call.send(JSON.stringify({ type: 'session.created' }));
  b.channel.send(JSON.stringify({ type: 'response.create' }));
  await waitFor(() => seen.messages.length === 1 && b.messages.length === 1, 3000, 'messages both ways');
  t.same(JSON.parse(seen.messages[0]!), { type: 'response.create' });
  t.same(JSON.parse(b.messages[0]!), { type: 'session.created' });

  await b.speak(1000);
  await waitFor(() => seen.pcm.length >= 48, 3000, 'decoded input');
  const input = Buffer.concat(seen.pcm);
  // 50 packets of 20 ms at 24 kHz: 960 bytes each; a few may still be in flight.
  t.ok(input.length >= 48 * 960 && input.length <= 50 * 960, `decoded ${input.length} bytes`);
  const steady = input.subarray(input.length / 4);
  t.ok(Math.abs(zeroCrossingHz(steady, 24_000) - 440) < 20, 'the input is the 440 Hz tone at 24 kHz');
  t.ok(rms(steady) > 3000, 'with its level');

  // The echo of what came in goes back out; it must take real time (20 ms a packet).
  const startedAt = performance.now();
  call.playAudio(input);
  call.endAudio();
  await waitFor(() => seen.stopped === 1, 5000, 'output played');
  const playMs = performance.now() - startedAt;
  const packets = Math.ceil(input.length / 960);
  t.equal(seen.started, 1, 'output_audio_buffer.started once');
  t.ok(playMs >= (packets - 2) * 20, `paced: ${packets} packets took ${playMs.toFixed(0)} ms`);
  await waitFor(() => b.received.length >= packets, 2000, 'output packets at the browser');
  const heard = b.heard();
  t.ok(Math.abs(zeroCrossingHz(heard.subarray(heard.length / 4), 48_000) - 440) < 20, 'the browser hears the tone');
  t.ok(b.received[0]!.rtp.header.marker, 'the talkspurt starts with the marker bit');

  const stats = call.getStats();
  t.equal(stats.state, 'connected');
  t.ok(stats.packetsReceived >= 48);
  t.equal(stats.packetsLost, 0);
  t.ok(stats.jitterMs >= 0 && stats.jitterMs < 50, `jitter ${stats.jitterMs.toFixed(2)} ms`);
  t.equal(stats.audioInMs, Math.floor(input.length / 48));
  t.equal(stats.audioOutMs, Math.floor(input.length / 48));
  t.equal(ep.counters.callsConnected, 1);

  // Barge-in: clear drops what was not played.
  call.playAudio(Buffer.alloc(960 * 50));
  await new Promise((r) => setTimeout(r, 100));
  const dropped = call.clearAudio();
  t.ok(dropped > 700 && dropped < 960, `cleared ${dropped} ms of 1000`);
  t.notOk(call.outputPlaying);

  await b.pc.close();
  await waitFor(() => call.state === 'closed', 5000, 'closed when the browser closes');
  t.equal(ep.liveCalls, 0);
});

t.test('offers that cannot be answered are refused with a typed 400 and counted', async (t) => {
  const ep = await endpoint(t);
  const b = await browser(t);
  const good = await b.offer();
  const refuse = async (sdp: unknown, problem: string) => {
    const err = await ep.answer(sdp as string).then(
      () => undefined,
      (e: unknown) => e,
    );
    t.ok(err instanceof SdpOfferError, `${problem}: an SdpOfferError`);
    t.equal((err as SdpOfferError).problem, problem);
    t.equal((err as SdpOfferError).code, 'invalid_request');
  };
  await refuse('', 'malformed');
  await refuse('hello world', 'malformed');
  await refuse(good.replace('v=0', 'v=1'), 'malformed');
  await refuse('v=0\r\n' + 'a=x\r\n'.repeat(20_000), 'too_large');
  await refuse(good.replace(/m=audio[\s\S]*?(?=m=application)/, ''), 'no_audio');
  await refuse(good.replace(/m=application[\s\S]*$/, ''), 'no_data_channel');
  await refuse(good.replace(/opus\/48000\/2/gi, 'PCMU/8000'), 'unsupported_codec');
  await refuse(good.replace(/a=ice-pwd:.*\r\n/g, ''), 'no_ice_credentials');
  t.equal(ep.counters.offersRefused.malformed, 3);
  t.equal(ep.counters.offersRefused.no_audio, 1);
  t.equal(ep.counters.callsAnswered, 0);
});

t.test('garbage datagrams on the port are dropped and counted; a live call is unharmed', async (t) => {
  const ep = await endpoint(t);
  const b = await browser(t);
  const { sdp, call } = await ep.answer(await b.offer());
  const seen = track(call);
  await b.accept(sdp);
  await b.connected();

  const sock = createSocket('udp4');
  t.teardown(() => sock.close());
  const send = (buf: Buffer) => new Promise<void>((r) => sock.send(buf, ep.port, '127.0.0.1', () => r()));
  await send(Buffer.alloc(0));
  await send(Buffer.from('GET / HTTP/1.1\r\n\r\n'));
  for (let i = 0; i < 50; i++) await send(Buffer.from(Array.from({ length: 200 }, () => Math.floor(Math.random() * 256))));
  const stun = (username: string) =>
    new Message(methods.BINDING, classes.REQUEST)
      .setAttribute('USERNAME', username)
      .addMessageIntegrity(Buffer.from('not-the-password'))
      .addFingerprint().bytes;
  await send(stun('nobody:x'));
  const ufrag = /a=ice-ufrag:(\S+)/.exec(sdp)![1]!;
  await send(stun(`${ufrag}:x`));
  await send(Buffer.from([0x80, 0x6f, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1, 1, 2, 3])); // RTP-shaped, from a stranger
  await send(Buffer.from([22, 254, 253, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0])); // DTLS-shaped, from a stranger
  await waitFor(() => ep.counters.datagramsDropped.unknown_address >= 2, 2000, 'drops counted');
  const d = ep.counters.datagramsDropped;
  t.equal(d.garbage + d.unknown_address, 54, 'every stray datagram dropped');
  t.equal(ep.counters.datagramsDropped.unknown_ufrag, 1);
  t.equal(ep.counters.datagramsDropped.bad_integrity, 1);

  await b.speak(200);
  await waitFor(() => seen.pcm.length >= 8, 3000, 'the call still carries audio');
  t.equal(call.state, 'connected');
});

t.test('a DTLS fingerprint that does not match the offer fails the call as a DTLS failure', async (t) => {
  const ep = await endpoint(t, { connectTimeoutMs: 4000 });
  const b = await browser(t);
  const offer = (await b.offer()).replace(
    /a=fingerprint:sha-256 (\S+)/g,
    (_m, fp: string) => `a=fingerprint:sha-256 ${fp.startsWith('00') ? '11' : '00'}${fp.slice(2)}`,
  );
  const { sdp, call } = await ep.answer(offer);
  const seen = track(call);
  await b.accept(sdp);
  await waitFor(() => call.state === 'failed', 6000, 'the call fails');
  t.equal(seen.failure, 'dtls');
  t.equal(ep.counters.dtlsFailures, 1);
  t.equal(ep.counters.callsConnected, 0);
  t.equal(ep.liveCalls, 0);
});

t.test('an offer nobody connects fails as an ICE failure at the connect deadline', async (t) => {
  const ep = await endpoint(t, { connectTimeoutMs: 500 });
  const b = await browser(t);
  const { call } = await ep.answer(await b.offer());
  const seen = track(call);
  await waitFor(() => call.state === 'failed', 3000, 'the call fails');
  t.equal(seen.failure, 'ice');
  t.equal(ep.counters.iceFailures, 1);
});

t.test('a peer that goes silent is disconnected, then failed after failAfterMs', async (t) => {
  const ep = await endpoint(t, { livenessMs: 400, failAfterMs: 800 });
  const hop = await UdpHop.open(ep.port);
  t.teardown(() => hop.close());
  const b = await browser(t);
  const { sdp, call } = await ep.answer(await b.offer());
  const seen = track(call);
  await b.accept(sdp.replace(new RegExp(` ${ep.port} typ host`, 'g'), ` ${hop.port} typ host`));
  await b.connected();
  await waitFor(() => call.state === 'connected', 3000, 'connected');
  const cutAt = performance.now();
  hop.cut();
  await waitFor(() => call.state === 'failed', 5000, 'failed');
  const took = performance.now() - cutAt;
  t.same(seen.states, ['connected', 'disconnected', 'failed']);
  t.equal(seen.failure, 'ice');
  t.ok(took >= 800 + 400 - 100, `failed ${took.toFixed(0)} ms after the cut`);
});

t.test('oversize data-channel messages are dropped and reported; the channel goes on', async (t) => {
  const ep = await endpoint(t, { maxMessageBytes: 2048 });
  const b = await browser(t);
  const { sdp, call } = await ep.answer(await b.offer());
  const seen = track(call);
  t.match(sdp, /a=max-message-size:2048/);
  // A peer that ignores the advertised limit (a browser would refuse to send it).
  await b.accept(sdp.replace(/a=max-message-size:\d+/g, 'a=max-message-size:1048576'));
  await b.connected();
  b.channel.send('x'.repeat(10_000));
  b.channel.send(JSON.stringify({ type: 'response.create' }));
  await waitFor(() => seen.messages.length === 1, 3000, 'the next message');
  t.same(seen.oversize, [10_000]);
  t.same(JSON.parse(seen.messages[0]!), { type: 'response.create' });
  t.equal(call.state, 'connected');
});

t.test('a data channel with another label is ignored', async (t) => {
  const ep = await endpoint(t);
  const b = await browser(t, 'something-else');
  const { sdp, call } = await ep.answer(await b.offer());
  const seen = track(call);
  await b.accept(sdp);
  await b.connected();
  b.channel.send('{"type":"response.create"}');
  await new Promise((r) => setTimeout(r, 300));
  t.same(seen.messages, []);
  t.equal(call.state, 'connected');
});
