import t from 'tap';
import {
  S2SApiError,
  S2SClient,
  type DataChannelLike,
  type MediaTrackLike,
  type PeerConnectionLike,
  type PlaybackElementLike,
  type StatsReportLike,
} from '../src/index.js';

const SECRET = `ek_${'b'.repeat(40)}`;
const SESSION = { type: 'realtime', object: 'realtime.session', id: 'vs_call1', model: 'local/echo-1', instructions: 'Be brief.' };

/** An RTCDataChannel stand-in: what the client sends is recorded, what the "gateway" sends is pushed. */
class FakeChannel implements DataChannelLike {
  readyState = 'connecting';
  sent: Record<string, any>[] = [];
  onopen: ((ev: unknown) => void) | null = null;
  onmessage: ((ev: { data: unknown }) => void) | null = null;
  onclose: ((ev: unknown) => void) | null = null;
  constructor(readonly label: string) {}
  send(data: string) {
    this.sent.push(JSON.parse(data));
  }
  close() {
    this.readyState = 'closed';
  }
  push(event: object | string) {
    this.onmessage?.({ data: typeof event === 'string' ? event : JSON.stringify(event) });
  }
}

/** An RTCPeerConnection stand-in: the answer opens the channel and sends session.created, as the relay does. */
class FakePeer implements PeerConnectionLike {
  static last: FakePeer;
  connectionState = 'new';
  localDescription: { sdp: string } | null = null;
  channel!: FakeChannel;
  tracks: unknown[] = [];
  transceivers: unknown[] = [];
  remote: string | null = null;
  closed = false;
  stats: StatsReportLike[] = [];
  ontrack: ((ev: { track: MediaTrackLike; streams: readonly unknown[] }) => void) | null = null;
  onconnectionstatechange: ((ev: unknown) => void) | null = null;
  constructor(readonly config?: object) {
    FakePeer.last = this;
  }
  createDataChannel(label: string) {
    return (this.channel = new FakeChannel(label));
  }
  addTrack(track: never) {
    this.tracks.push(track);
  }
  addTransceiver(kind: 'audio', init: { direction: string }) {
    this.transceivers.push({ kind, ...init });
  }
  async createOffer() {
    return { type: 'offer', sdp: 'v=0 offer' };
  }
  async setLocalDescription(d: { sdp?: string | undefined }) {
    this.localDescription = { sdp: d.sdp ?? '' };
  }
  async setRemoteDescription(d: { sdp: string }) {
    this.remote = d.sdp;
    setTimeout(() => {
      this.connectionState = 'connected';
      this.onconnectionstatechange?.({});
      this.ontrack?.({ track: { kind: 'audio' }, streams: ['remote-stream'] });
      this.channel.readyState = 'open';
      this.channel.push({ type: 'session.created', event_id: 'evt_1', session: SESSION });
    }, 0);
  }
  async getStats() {
    return this.stats;
  }
  close() {
    this.closed = true;
    this.connectionState = 'closed';
  }
}

/** A fetch that answers the calls endpoint as the gateway does, and records what it was sent. */
function gateway(answer: { status: number; body: string; location?: string }) {
  const requests: { url: string; init: RequestInit }[] = [];
  const fetch = (async (url: string, init: RequestInit) => {
    requests.push({ url, init });
    const headers: Record<string, string> = { 'content-type': answer.status === 201 ? 'application/sdp' : 'application/json' };
    if (answer.location) headers.location = answer.location;
    return new Response(answer.body, { status: answer.status, headers });
  }) as unknown as typeof globalThis.fetch;
  return { fetch, requests };
}

t.test('realtime.call: offer with the channel and the microphone, the answer applied, session.created', async (t) => {
  const gw = gateway({ status: 201, body: 'v=0 answer', location: '/v1/realtime/calls/vs_call1' });
  const client = new S2SClient({ baseUrl: 'http://gw.example/', fetch: gw.fetch });
  const audio: PlaybackElementLike = { srcObject: null };
  const mic = { kind: 'audio' };
  const call = await client.realtime.call({
    credential: SECRET,
    microphone: { getAudioTracks: () => [mic] },
    audio,
    RTCPeerConnection: FakePeer,
    rtcConfiguration: { iceServers: [] },
    validate: true,
  });
  const pc = FakePeer.last;
  t.equal(pc.channel.label, 'oai-events');
  t.same(pc.tracks, [mic], "the microphone stream's audio track is sent");
  t.same(pc.config, { iceServers: [] });
  t.equal(gw.requests.length, 1);
  const req = gw.requests[0]!;
  t.equal(req.url, 'http://gw.example/v1/realtime/calls');
  t.equal(req.init.method, 'POST');
  t.same(
    req.init.headers,
    { Authorization: `Bearer ${SECRET}`, 'Content-Type': 'application/sdp' },
    'the secret as a bearer, the raw offer',
  );
  t.equal(req.init.body, 'v=0 offer');
  t.equal(pc.remote, 'v=0 answer', 'the answer applied');
  t.equal(call.callId, 'vs_call1', 'the call id from Location');
  t.same(call.session, SESSION);
  t.same(call.remoteTrack, { kind: 'audio' });
  t.equal(audio.srcObject, 'remote-stream', 'the answer plays in the element given');

  // Events both ways, typed by the OpenAI dialect; updateSession adds type: "realtime".
  const seen: string[] = [];
  call.on('output_audio_buffer.started', (e) => seen.push(`${e.type} ${e.response_id}`));
  pc.channel.push({ type: 'output_audio_buffer.started', event_id: 'evt_2', response_id: 'resp_1' });
  t.same(seen, ['output_audio_buffer.started resp_1']);
  const updated = call.updateSession({ instructions: 'Shorter.' });
  const sent = pc.channel.sent.at(-1)!;
  t.match(sent, { type: 'session.update', session: { type: 'realtime', instructions: 'Shorter.' } });
  pc.channel.push({ type: 'session.updated', event_id: 'evt_3', session: { ...SESSION, instructions: 'Shorter.' } });
  t.equal((await updated).instructions, 'Shorter.');
  const refused = call.updateSession({ instructions: 'x' });
  const refusedId = pc.channel.sent.at(-1)!.event_id;
  pc.channel.push({
    type: 'error',
    event_id: 'evt_4',
    error: { type: 'invalid_request_error', code: 'invalid_value', message: 'no', param: 'session.instructions', event_id: refusedId },
  });
  await t.rejects(refused, /session.update refused: invalid_value \(session.instructions\)/);
  call.clearOutput();
  t.match(pc.channel.sent.at(-1), { type: 'output_audio_buffer.clear' });

  // Stats: the remote track's jitter and loss, the microphone's packets, the round trip.
  pc.stats = [
    {
      type: 'inbound-rtp',
      kind: 'audio',
      packetsReceived: 95,
      packetsLost: 5,
      jitter: 0.012,
      totalSamplesReceived: 4800,
      concealedSamples: 10,
    },
    { type: 'outbound-rtp', kind: 'audio', packetsSent: 120, bytesSent: 9000 },
    { type: 'candidate-pair', nominated: true, currentRoundTripTime: 0.004 },
    { type: 'inbound-rtp', kind: 'video', packetsReceived: 1 },
  ];
  t.same(await call.getStats(), {
    inbound: { packetsReceived: 95, packetsLost: 5, lossPercent: 5, jitterMs: 12, totalSamplesReceived: 4800, concealedSamples: 10 },
    outbound: { packetsSent: 120, bytesSent: 9000 },
    roundTripMs: 4,
  });

  // Hangup: channel and peer closed, waiters rejected, `ended` resolved.
  const pending = call.waitFor('response.done');
  t.same(await call.hangup(), { reason: 'hangup' });
  t.equal(pc.channel.readyState, 'closed');
  t.ok(pc.closed);
  await t.rejects(pending, /ended \(hangup\)/);
  t.notOk(call.isOpen);
  t.throws(() => call.sendText('hi'), /ended/);
});

t.test('realtime.call: the gateway closing the channel ends the call', async (t) => {
  const gw = gateway({ status: 201, body: 'v=0 answer', location: '/v1/realtime/calls/vs_call1' });
  const call = await new S2SClient({ baseUrl: 'http://gw.example', fetch: gw.fetch }).realtime.call({
    credential: SECRET,
    audio: false,
    RTCPeerConnection: FakePeer,
  });
  t.same(FakePeer.last.transceivers, [{ kind: 'audio', direction: 'recvonly' }], 'no microphone: receive only');
  FakePeer.last.channel.onclose?.({});
  t.same(await call.ended, { reason: 'closed' });
  t.ok(FakePeer.last.closed, 'the peer connection is closed too');
});

t.test('realtime.call: a refused offer rejects with the ErrorResponse and closes the peer', async (t) => {
  const body = JSON.stringify({
    error: { type: 'authentication_error', code: 'invalid_client_secret', message: 'unknown secret', request_id: 'req_1' },
  });
  const gw = gateway({ status: 401, body });
  const client = new S2SClient({ baseUrl: 'http://gw.example', fetch: gw.fetch });
  const err = await client.realtime.call({ credential: SECRET, audio: false, RTCPeerConnection: FakePeer }).catch((e: unknown) => e);
  t.ok(err instanceof S2SApiError);
  t.match(err, { status: 401, code: 'invalid_client_secret', requestId: 'req_1' });
  t.ok(FakePeer.last.closed, 'the peer connection is closed');
});

t.test('realtime.call: an event that does not match the contract ends a validating call', async (t) => {
  const gw = gateway({ status: 201, body: 'v=0 answer', location: '/v1/realtime/calls/vs_call1' });
  const call = await new S2SClient({ baseUrl: 'http://gw.example', fetch: gw.fetch }).realtime.call({
    credential: SECRET,
    audio: false,
    RTCPeerConnection: FakePeer,
    validate: true,
  });
  FakePeer.last.channel.push({ type: 'output_audio_buffer.stopped', event_id: 'evt_9' });
  t.same(await call.ended, { reason: 'hangup' });
  await t.rejects(call.waitFor('response.done'), /output_audio_buffer.stopped does not match the contract: response_id/);
});

t.test('realtime.call without an RTCPeerConnection says so', async (t) => {
  const client = new S2SClient({ baseUrl: 'http://gw.example' });
  t.throws(() => client.realtime.call({ credential: SECRET }), /no RTCPeerConnection here/);
});

t.test('calls.create in OpenAI multipart form with the API key; calls.hangup', async (t) => {
  const gw = gateway({ status: 201, body: 'v=0 answer', location: '/v1/realtime/calls/vs_m1' });
  const client = new S2SClient({ baseUrl: 'http://gw.example', apiKey: 'vr_sk_test', fetch: gw.fetch });
  const answer = await client.calls.create('v=0 offer', { session: { type: 'realtime', model: 'local/echo-1' } });
  t.same(answer, { sdp: 'v=0 answer', callId: 'vs_m1' });
  const req = gw.requests[0]!;
  t.same(req.init.headers, { Authorization: 'Bearer vr_sk_test' }, 'fetch sets the multipart boundary itself');
  const form = req.init.body as FormData;
  t.equal(form.get('sdp'), 'v=0 offer');
  t.same(JSON.parse(String(form.get('session'))), { type: 'realtime', model: 'local/echo-1' });

  const noLocation = gateway({ status: 201, body: 'v=0 answer' });
  await t.rejects(
    new S2SClient({ baseUrl: 'http://gw.example', fetch: noLocation.fetch }).calls.create('v=0', { credential: SECRET }),
    /without a Location naming the call/,
  );

  const hung = gateway({ status: 200, body: JSON.stringify({ id: 'vs_m1', status: 'active' }) });
  const ended = await new S2SClient({ baseUrl: 'http://gw.example', apiKey: 'vr_sk_test', fetch: hung.fetch }).calls.hangup('vs_m1');
  t.equal(ended.id, 'vs_m1');
  t.equal(hung.requests[0]!.url, 'http://gw.example/v1/realtime/calls/vs_m1/hangup');
  t.equal(hung.requests[0]!.init.method, 'POST');
});
