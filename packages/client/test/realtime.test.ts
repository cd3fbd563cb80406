import t from 'tap';
import type { ServerEvent, VoiceSession } from '@s2s/contract';
import {
  connectRealtime,
  S2SRealtimeClosedError,
  type BrowserWebSocketConstructor,
  type RealtimeConnection,
  type ServerEventOf,
  type SocketLike,
} from '../src/index.js';

const SECRET = `ek_${'a'.repeat(32)}`;
const URL = 'ws://gw.example/v1/realtime?session_id=vs_1';

/** A WebSocket stand-in: what the client sends is recorded, what the "server" sends is pushed by the test. */
class FakeSocket implements SocketLike {
  static last: FakeSocket;
  readyState = 0;
  protocol = 'svc-realtime-v1';
  sent: Record<string, any>[] = [];
  onopen: ((ev: unknown) => void) | null = null;
  onmessage: ((ev: { data: unknown }) => void) | null = null;
  onclose: ((ev: { code: number; reason: string }) => void) | null = null;
  onerror: ((ev: unknown) => void) | null = null;
  constructor(
    readonly url: string,
    readonly protocols?: string | string[],
  ) {
    FakeSocket.last = this;
    // A task, as a real socket's events are: the client has wired its handlers by then.
    setTimeout(() => {
      this.readyState = 1;
      this.onopen?.({});
      this.push({ type: 'session.created', event_id: 'evt_s1', session: SESSION });
    }, 0);
  }
  send(data: string) {
    this.sent.push(JSON.parse(data));
  }
  close(code = 1000, reason = '') {
    this.readyState = 3;
    queueMicrotask(() => this.onclose?.({ code, reason }));
  }
  push(event: unknown) {
    this.onmessage?.({ data: JSON.stringify(event) });
  }
}
const Fake = FakeSocket as unknown as BrowserWebSocketConstructor;

const FORMAT = { type: 'audio/pcm', encoding: 'pcm16le', sample_rate_hz: 24000, channels: 1 } as const;
const SESSION: VoiceSession = {
  id: 'vs_1',
  object: 'voice.session',
  status: 'ready',
  model: 'local/echo-1',
  mode: 'speech_to_speech',
  realtime: { url: URL, protocol: 'svc-realtime-v1' },
  audio: { input: FORMAT, output: FORMAT },
  capabilities: {
    speech_to_speech: true,
    server_vad: true,
    barge_in: true,
    input_transcription: 'optional',
    output_transcription: 'optional',
  },
  created_at: 1,
  expires_at: 2,
  billing: { preauthorized_cents: 10, balance_cents: 100, reserved_cents: 10 },
  usage: {
    model: 'local/echo-1',
    provider: 'local',
    pricing_source: 'upstream_derived',
    rate_snapshot_id: 'rate_1',
    audio_in_ms: 0,
    audio_out_ms: 0,
    billed_cents: 0,
    input_audio_tokens: 0,
    input_text_tokens: 0,
    cached_input_tokens: 0,
    output_audio_tokens: 0,
    output_text_tokens: 0,
    transcribed_ms: 0,
  },
  trace_id: '0'.repeat(32),
};
const USAGE = {
  audio_in_ms: 0,
  audio_out_ms: 0,
  input_audio_tokens: 0,
  input_text_tokens: 3,
  cached_input_tokens: 0,
  output_audio_tokens: 0,
  output_text_tokens: 0,
  transcribed_ms: 0,
};
const place = { response_id: 'resp_1', item_id: 'item_1', output_index: 0 };

async function connect(opts: { validate?: boolean } = {}): Promise<{ conn: RealtimeConnection; socket: FakeSocket }> {
  const conn = await connectRealtime(URL, { credential: SECRET, WebSocket: Fake, validate: opts.validate });
  return { conn, socket: FakeSocket.last };
}

t.test('a browser-style socket gets the secret in the svc-realtime-v1.auth subprotocol; an API key is refused', async (t) => {
  const { conn, socket } = await connect();
  t.same(socket.protocols, ['svc-realtime-v1', `svc-realtime-v1.auth.${SECRET}`]);
  t.equal(conn.session.id, 'vs_1');
  await t.rejects(connectRealtime(URL, { credential: 'vr_sk_abc', WebSocket: Fake }), /ek_ client secret/);
});

t.test('listeners get the events of their type, typed; "*" gets all', async (t) => {
  const { conn, socket } = await connect();
  const got: string[] = [];
  conn.on('response.done', (e) => {
    // Compile-time: the event is narrowed to response.done, so its usage is typed.
    const ms: number = e.response.usage.output_text_tokens;
    got.push(`done ${e.response.id} ${ms}`);
  });
  conn.on('input_audio_buffer.speech_started', (e) => got.push(`started ${e.audio_start_ms}`));
  const all: ServerEvent['type'][] = [];
  const stop = conn.on('*', (e) => all.push(e.type));
  socket.push({ type: 'input_audio_buffer.speech_started', event_id: 'e1', audio_start_ms: 40 });
  socket.push({
    type: 'response.done',
    event_id: 'e2',
    response: { id: 'resp_1', status: 'completed', usage: { ...USAGE, output_text_tokens: 5 } },
  });
  stop();
  socket.push({ type: 'input_audio_buffer.speech_stopped', event_id: 'e3', audio_end_ms: 900 });
  t.same(got, ['started 40', 'done resp_1 5']);
  t.same(all, ['input_audio_buffer.speech_started', 'response.done']);
  const typed: ServerEventOf<'error'>['error']['code'] = 'budget_exhausted';
  t.equal(typed, 'budget_exhausted');
});

t.test('send numbers event ids; audio helpers send base64 frames; output audio is decoded', async (t) => {
  const { conn, socket } = await connect();
  const id = conn.send({ type: 'input_audio_buffer.commit' });
  t.equal(socket.sent[0]!.event_id, id);
  t.equal(conn.send({ type: 'input_audio_buffer.clear', event_id: 'mine' }), 'mine');
  t.equal(conn.appendAudio(new Int16Array(480 * 3)), 2880);
  const appends = socket.sent.filter((e) => e.type === 'input_audio_buffer.append');
  t.same(
    appends.map((e) => Buffer.from(e.audio, 'base64').length),
    [960, 960, 960],
  );
  const heard: number[][] = [];
  conn.onAudio((pcm, e) => heard.push([...pcm, e.content_index]));
  socket.push({
    type: 'response.output_audio.delta',
    event_id: 'e',
    ...place,
    content_index: 0,
    audio: Buffer.from([1, 2, 3, 4]).toString('base64'),
  });
  t.same(heard, [[1, 2, 3, 4, 0]]);

  const sent = [];
  const t0 = performance.now();
  const bytes = await conn.streamAudio(new Uint8Array(960 * 4), { frameMs: 20, onFrame: (n) => sent.push(n) });
  t.equal(bytes, 3840);
  t.equal(sent.length, 4);
  t.ok(performance.now() - t0 >= 55, 'paced in real time: the 4th frame leaves 60 ms after the first');
});

t.test('updateSession resolves with session.updated and rejects with the refusal naming the param', async (t) => {
  const { conn, socket } = await connect();
  const ok = conn.updateSession({ instructions: 'be brief' });
  socket.push({
    type: 'session.updated',
    event_id: 'e',
    session: {
      voice: null,
      turn_detection: { type: 'server_vad' },
      audio: { input: { format: FORMAT, transcription: null, noise_reduction: null }, output: { format: FORMAT } },
      instructions: 'be brief',
      tools: [],
      tool_choice: 'auto',
      output_modalities: ['audio'],
      max_output_tokens: 'inf',
    },
  });
  t.equal((await ok).instructions, 'be brief');
  const refused = conn.updateSession({ voice: 'x' });
  const eventId = socket.sent.at(-1)!.event_id;
  socket.push({
    type: 'error',
    event_id: 'e',
    error: {
      type: 'invalid_request_error',
      code: 'unsupported_parameter',
      message: 'no voice after audio',
      param: 'session.voice',
      event_id: eventId,
    },
  });
  await t.rejects(refused, /session.update refused: unsupported_parameter \(session.voice\): no voice after audio/);
});

t.test('tool calls: every call answered after its response.done, then one response.create', async (t) => {
  const { conn, socket } = await connect();
  const calls: string[] = [];
  conn.handleToolCalls(async (call) => {
    calls.push(`${call.name} ${call.arguments}`);
    if (call.name === 'broken') throw new Error('no such order');
    return { status: 'shipped' };
  });
  socket.push({
    type: 'response.function_call_arguments.done',
    event_id: 'e',
    ...place,
    call_id: 'c1',
    name: 'lookup',
    arguments: '{"id":1}',
  });
  socket.push({ type: 'response.function_call_arguments.done', event_id: 'e', ...place, call_id: 'c2', name: 'broken', arguments: '{}' });
  await new Promise((r) => setTimeout(r, 5));
  t.same(socket.sent, [], 'nothing is sent while the calling response is under way');
  socket.push({ type: 'response.done', event_id: 'e', response: { id: 'resp_1', status: 'completed', usage: USAGE } });
  await new Promise((r) => setTimeout(r, 5));
  t.same(calls, ['lookup {"id":1}', 'broken {}']);
  t.same(
    socket.sent.map(({ event_id: _id, ...e }) => e),
    [
      { type: 'conversation.item.create', item: { type: 'function_call_output', call_id: 'c1', output: '{"status":"shipped"}' } },
      { type: 'conversation.item.create', item: { type: 'function_call_output', call_id: 'c2', output: '{"error":"no such order"}' } },
      { type: 'response.create' },
    ],
  );
});

t.test('validate: an event off the contract fails the connection with a message naming it', async (t) => {
  const { conn, socket } = await connect({ validate: true });
  const waiting = conn.waitFor('response.done');
  socket.push({ type: 'response.done', event_id: 'e', response: { id: 'r', status: 'completed', usage: { audio_in_ms: -1 } } });
  await t.rejects(waiting, /response.done does not match the contract/);
  t.equal((await conn.closed).code, 1000);
});

t.test('a socket closed by the server rejects waiters with its close code; waitFor times out', async (t) => {
  const { conn, socket } = await connect();
  await t.rejects(conn.waitFor('response.created', { timeoutMs: 10 }), /no response.created within 10 ms/);
  const waiting = conn.waitFor('response.done');
  socket.readyState = 3;
  socket.onclose?.({ code: 1011, reason: 'upstream failed' });
  const err = await waiting.catch((e: unknown) => e);
  t.ok(err instanceof S2SRealtimeClosedError);
  t.equal((err as S2SRealtimeClosedError).code, 1011);
  t.match((err as Error).message, `realtime socket ${URL} closed with 1011 (upstream failed)`);
  t.throws(() => conn.send({ type: 'response.create' }), /closed with 1011/);
});

t.test('close() does not wait forever for a peer that never finishes the closing handshake', async (t) => {
  const { conn, socket } = await connect();
  let terminated = false;
  // The peer never answers the close frame; the runtime can drop the socket (ws's terminate).
  socket.close = () => {
    socket.readyState = 2;
  };
  (socket as FakeSocket & { terminate: () => void }).terminate = () => {
    terminated = true;
  };
  const info = await conn.close(1000, '', 20);
  t.equal(info.code, 1006);
  t.ok(terminated, 'the socket was dropped');
  t.equal((await conn.closed).code, 1006);
  t.equal((await conn.close()).code, 1006, 'a second close answers at once');
});

t.test('createResponse catches a short response whose created and done arrive in one read', async (t) => {
  const { conn, socket } = await connect();
  const asked = conn.createResponse(undefined, { timeoutMs: 2000 });
  // No await between the two, as when both frames come in one TCP read (a tool call answers at once).
  socket.push({ type: 'response.created', event_id: 'e1', response: { id: 'r9', status: 'in_progress' } });
  socket.push({ type: 'response.done', event_id: 'e2', response: { id: 'r9', status: 'completed', usage: {} } });
  t.equal((await asked).response.id, 'r9');
  t.match(socket.sent.at(-1), { type: 'response.create' });
});
