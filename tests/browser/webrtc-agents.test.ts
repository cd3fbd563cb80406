// Issue 27 in a real browser: the unmodified @openai/agents-realtime WebRTC transport (its published browser
// bundle, the SDK's default in a browser) calls the gateway with an `ek_` secret its backend minted, only the
// URL changed. The media terminates in the relay: Chromium's microphone (a WAV) goes up the Opus track, the
// local provider's spoken answer comes back on the remote track (Chromium's RTP stats count it), the
// transcript reaches the SDK's history over `oai-events`. A typed turn makes the model call the agent's tool: the
// SDK runs it in the page and answers over `oai-events`, and the result is spoken. A long answer is interrupted
// while it plays (session.interrupt()): the track stops, the item is truncated at what was played and the
// response cancelled. The backend hangs up, and the bill is exact, counting only the audio that was sent.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import type { VoiceSession } from '@s2s/contract';
import { eventually } from '@s2s/testing';
import { expectedCents } from '../e2e/bill.js';
import { api, expectCharged } from '../e2e/stack.js';
import { launchChromium, skipWithoutChromium, speechWav } from './chromium.js';
import { startWebRtcApp } from './webrtc-app.js';

const MODEL = 'local/echo-1';

interface HistoryItem {
  itemId: string;
  role?: string;
  type: string;
  status?: string;
  name?: string;
  arguments?: string;
  output?: string | null;
  content?: { type: string; transcript?: string | null; text?: string }[];
}

interface PageResult {
  connected: boolean;
  connectError: string | null;
  callId: string | null;
  history: HistoryItem[];
  events: string[];
  truncated: { item_id: string; audio_end_ms: number }[];
  responses: { status: string; audio_tokens: number }[];
  retrieved: { item_id: string; transcript?: string | null }[];
  sent: { type: string; item?: { type?: string; call_id?: string; output?: string } }[];
  toolCalls: { city: string }[];
  errors: string[];
  inbound: { packetsReceived: number; totalSamplesReceived: number; jitter: number; packetsLost: number } | null;
  connection: string | null;
}

// The page records what the SDK sends on the data channel (`oai-events`) by wrapping RTCDataChannel's send
// before the bundle loads; the SDK itself is untouched. Its tool records the arguments the model called it with.
const PAGE = `<!doctype html><meta charset="utf-8"><script>
const result = { connected: false, connectError: null, callId: null, history: [], events: [], truncated: [], retrieved: [], responses: [], sent: [], toolCalls: [], errors: [], inbound: null, connection: null };
window.result = result;
const send = RTCDataChannel.prototype.send;
RTCDataChannel.prototype.send = function (data) {
  try {
    const e = JSON.parse(data);
    result.sent.push({ type: e.type, item: e.item && { type: e.item.type, call_id: e.item.call_id, output: e.item.output } });
  } catch {}
  return send.call(this, data);
};
</script><script src="/agents.umd.js"></script><script>
const params = new URLSearchParams(location.search);
(async () => {
  const credential = await (await fetch('/credential', { method: 'POST' })).json();
  const { RealtimeAgent, RealtimeSession, OpenAIRealtimeWebRTC, tool } = window.OpenAIAgentsRealtime;
  const lookupCity = tool({
    name: 'lookup_city',
    description: 'The weather in a city.',
    parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'], additionalProperties: false },
    strict: true,
    execute: async (args) => {
      result.toolCalls.push(args);
      return 'sunny in ' + args.city;
    },
  });
  const agent = new RealtimeAgent({ name: 'Assistant', instructions: 'Answer briefly.', tools: [lookupCity] });
  const transport = new OpenAIRealtimeWebRTC({ baseUrl: params.get('calls') });
  const session = new RealtimeSession(agent, { transport, model: credential.model });
  session.on('history_updated', (h) => (result.history = h));
  session.on('error', (e) => result.errors.push(String(e.error?.error?.message ?? e.error?.message ?? e.error)));
  transport.on('*', (e) => {
    if (e && typeof e.type === 'string' && e.type.startsWith('output_audio_buffer.')) result.events.push(e.type);
    if (e && e.type === 'response.done') result.responses.push({ status: e.response?.status, audio_tokens: e.response?.usage?.output_token_details?.audio_tokens });
    if (e && e.type === 'conversation.item.truncated') result.truncated.push({ item_id: e.item_id, audio_end_ms: e.audio_end_ms });
    if (e && e.type === 'conversation.item.retrieved') result.retrieved.push({ item_id: e.item.id, transcript: e.item.content?.[0]?.transcript });
  });
  // Typed turns: the microphone stops sending first (its silence would otherwise be committed with the turn).
  window.say = async (text) => {
    for (const sender of transport.connectionState.peerConnection.getSenders()) await sender.replaceTrack(null);
    await new Promise((r) => setTimeout(r, 200));
    transport.sendEvent({ type: 'input_audio_buffer.clear' });
    session.sendMessage(text);
  };
  window.interrupt = () => session.interrupt();
  window.poll = async () => {
    const pc = transport.connectionState.peerConnection;
    result.connection = pc ? pc.connectionState : null;
    if (pc) (await pc.getStats()).forEach((s) => {
      if (s.type === 'inbound-rtp' && s.kind === 'audio') result.inbound = { packetsReceived: s.packetsReceived, totalSamplesReceived: s.totalSamplesReceived, jitter: s.jitter, packetsLost: s.packetsLost };
    });
    return result;
  };
  try {
    await session.connect({ apiKey: credential.value });
    result.connected = true;
    result.callId = transport.connectionState.callId ?? null;
  } catch (err) {
    result.connectError = String(err?.message ?? err);
  }
})();
</script>`;

t.test('@openai/agents-realtime over WebRTC in Chromium, through the edge', { skip: skipWithoutChromium() }, async (t) => {
  // The package's published browser bundle, as a page would load it from a CDN (global OpenAIAgentsRealtime).
  const bundle = readFileSync(
    fileURLToPath(new URL('./node_modules/@openai/agents-realtime/dist/bundle/openai-realtime-agents.umd.js', import.meta.url)),
  );
  // The simulator paces its replies in real time (a 100 ms delta every 100 ms), as a model speaks: the barge-in
  // below lands while the answer is still being produced, so its response is cancelled part way.
  const { origin, stack, edge, key, rate, sessionId } = await startWebRtcApp(t, {
    model: MODEL,
    files: {
      '/webrtc.html': { type: 'text/html', body: PAGE },
      '/agents.umd.js': { type: 'text/javascript', body: bundle },
    },
    provider: { LOCAL_PROVIDER_REPLY_INTERVAL_MS: '100' },
  });

  // The speech starts 4 s after the microphone opens, so a call slow to connect on a loaded machine still hears it.
  const browser = await launchChromium(t, { microphoneWav: speechWav({ rate: 48_000, leadMs: 4000, speechMs: 1000, tailMs: 6000 }) });
  const page = await browser.newPage();
  const pageErrors: string[] = [];
  page.on('pageerror', (e) => pageErrors.push(e.message));
  await page.goto(`${origin}/webrtc.html?calls=${encodeURIComponent(`${edge.origin}/v1/realtime/calls`)}`);
  const poll = () => page.evaluate<PageResult>('window.poll ? window.poll() : window.result');
  const result = await eventually(
    poll,
    (r) =>
      r?.connectError != null ||
      (r?.history.some((i) => i.role === 'assistant' && i.content?.[0]?.transcript) && r.events.includes('output_audio_buffer.stopped')),
    45_000,
  );
  t.equal(result.connectError, null, 'the SDK connected over WebRTC with the ek_ secret');
  t.equal(result.connection, 'connected');
  t.equal(result.callId, sessionId(), 'Location names the call: its voice session');
  const said = result.history.find((i) => i.role === 'assistant')?.content?.[0]?.transcript;
  t.match(said, /^speech \d+ ms$/, 'the spoken answer is in the SDK history (transcript over oai-events)');
  const spokenMs = Number(/^speech (\d+) ms$/.exec(said ?? '')?.[1] ?? 0);
  // Chromium's statistics trail the packets a little: read them again once the last one has surely arrived.
  await new Promise((r) => setTimeout(r, 500));
  const packets = (await poll()).inbound?.packetsReceived ?? 0;
  t.ok(packets >= Math.floor(spokenMs / 20), `the ${spokenMs} ms answer played on the remote track: ${packets} packets of 20 ms`);
  t.same(
    result.events.filter((e) => e !== 'output_audio_buffer.cleared'),
    ['output_audio_buffer.started', 'output_audio_buffer.stopped'],
    'output_audio_buffer.started, then .stopped once the answer played',
  );
  t.same(result.errors, [], 'no error event');

  // A tool round trip: a typed turn `call lookup_city {...}` makes the simulator call the agent's tool; the SDK runs
  // it in the page and sends its output back over oai-events (function_call_output, then response.create); the
  // simulator speaks that output (60 ms a character), which plays on the track.
  const count = (r: PageResult, type: string) => r.events.filter((e) => e === type).length;
  await page.evaluate(`window.say(${JSON.stringify('call lookup_city {"city":"Paris"}')})`);
  const afterTool = await eventually(
    poll,
    (r) =>
      r.history.some((i) => i.role === 'assistant' && i.content?.[0]?.transcript === 'sunny in Paris') &&
      count(r, 'output_audio_buffer.stopped') >= 2,
    30_000,
  );
  t.same(afterTool.toolCalls, [{ city: 'Paris' }], "the tool's execute ran in the page with the model's arguments");
  const call = afterTool.history.find((i) => i.type === 'function_call');
  t.match(
    call,
    { name: 'lookup_city', arguments: '{"city":"Paris"}', status: 'completed', output: 'sunny in Paris' },
    'the call in the SDK history',
  );
  const outputAt = afterTool.sent.findIndex((e) => e.type === 'conversation.item.create' && e.item?.type === 'function_call_output');
  t.ok(outputAt >= 0, 'the SDK sent the function_call_output over oai-events');
  t.equal(afterTool.sent[outputAt]?.item?.output, 'sunny in Paris');
  t.equal(afterTool.sent[outputAt + 1]?.type, 'response.create', 'then response.create');
  t.equal(count(afterTool, 'output_audio_buffer.started'), 2, 'the answer after the tool played on the track');
  const toolAnswerMs = 'sunny in Paris'.length * 60;
  t.same(afterTool.errors, [], 'no error event');

  // A barge-in: while a long answer plays, the SDK interrupts (session.interrupt(): response.cancel and
  // output_audio_buffer.clear, as when its user speaks). The relay stops the track, tells the SDK
  // output_audio_buffer.cleared, and truncates the item at what was played; the SDK's history follows.
  const long = 'Tell me all about the sea, its tides, its waves and its winds.';
  const packetsBefore = (await poll()).inbound?.packetsReceived ?? 0;
  await page.evaluate(`window.say(${JSON.stringify(long)})`);
  await eventually(poll, (r) => count(r, 'output_audio_buffer.started') >= 3, 20_000);
  await new Promise((r) => setTimeout(r, 1200));
  const clearedBefore = count(await poll(), 'output_audio_buffer.cleared');
  await page.evaluate('window.interrupt()');
  const afterBarge = await eventually(
    poll,
    (r) =>
      count(r, 'output_audio_buffer.cleared') > clearedBefore &&
      r.truncated.length === 1 &&
      r.responses.length >= 4 &&
      r.retrieved.some((i) => i.item_id === r.truncated[0]?.item_id),
    15_000,
  );
  const fullMs = long.length * 60;
  const truncated = afterBarge.truncated[0]!;
  t.ok(
    truncated.audio_end_ms >= 800 && truncated.audio_end_ms < fullMs,
    `the answer was truncated at what was played: ${truncated.audio_end_ms} of ${fullMs} ms`,
  );
  // Chromium's statistics trail the packets a little (as above): the track carried what the truncation says.
  await new Promise((r) => setTimeout(r, 500));
  const playedMs = (((await poll()).inbound?.packetsReceived ?? 0) - packetsBefore) * 20;
  t.ok(
    Math.abs(playedMs - truncated.audio_end_ms) <= 300,
    `the remote track carried ${playedMs} ms of it (20 ms packets), truncated at ${truncated.audio_end_ms}`,
  );
  // As OpenAI does, truncating drops the server-side transcript (the SDK fetches the item again and keeps its
  // own copy of what was said), and the item is incomplete: its response was cancelled.
  t.same(
    afterBarge.retrieved.filter((i) => i.item_id === truncated.item_id).map((i) => i.transcript ?? ''),
    [''],
    'the truncated item, fetched again by the SDK, has no transcript',
  );
  const cut = afterBarge.history.find((i) => i.itemId === truncated.item_id);
  t.match(cut, { role: 'assistant', status: 'incomplete', content: [{ type: 'output_audio' }] }, 'the cut item in the SDK history');
  // The simulator speaks in 100 ms deltas and counts 50 ms an output audio token: the cancelled response's
  // tokens say how much of its answer it produced before the cancel.
  const cancelled = afterBarge.responses.at(-1)!;
  const cancelledMs = cancelled.audio_tokens * 50;
  t.equal(cancelled.status, 'cancelled', 'the interrupted response was cancelled');
  t.ok(
    cancelledMs >= truncated.audio_end_ms && cancelledMs < fullMs,
    `it produced ${cancelledMs} ms of its ${fullMs} ms answer before the cancel`,
  );
  t.same(afterBarge.errors, [], 'no error event');

  // The backend hangs up with its API key: the session ends (client_closed → completed) and is settled.
  const hung = await api<VoiceSession>({ ...stack, baseUrl: edge.origin }, 'POST', `/v1/realtime/calls/${sessionId()}/hangup`, {
    key: key.key,
  });
  t.equal(hung.status, 200);
  t.equal(hung.body.id, sessionId());
  const settled = await eventually(
    () => api<VoiceSession>(stack, 'GET', `/v1/voice/sessions/${sessionId()}`, { key: key.key }),
    (r) => r.body.status === 'completed' && r.body.billing.reserved_cents === 0,
    15_000,
  );
  t.equal(settled.body.status, 'completed', 'the hangup ended the session; billing settled it');
  const usage = settled.body.usage;
  t.ok(usage.audio_in_ms > 1000, `audio_in_ms ${usage.audio_in_ms}: what was decoded from the track`);
  t.equal(
    usage.audio_out_ms,
    spokenMs + toolAnswerMs + cancelledMs,
    'audio_out_ms: the echo, the spoken tool output, and only what was sent of the interrupted answer',
  );
  const cents = expectedCents(rate, usage);
  t.equal(usage.billed_cents, cents, `billed to the cent (${cents})`);
  await expectCharged(t, stack, key.wallet_id, 1000, cents);
  await eventually(poll, (r) => r.connection !== 'connected', 10_000);
  t.same(pageErrors, []);
});
