// Issue 27 in a real browser: the unmodified @openai/agents-realtime WebRTC transport (its published browser
// bundle, the SDK's default in a browser) calls the gateway with an `ek_` secret its backend minted, only the
// URL changed. The media terminates in the relay: Chromium's microphone (a WAV) goes up the Opus track, the
// local provider's spoken answer comes back on the remote track (Chromium's RTP stats count it), the
// transcript reaches the SDK's history over `oai-events`, the backend hangs up, and the bill is exact.
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import type { VoiceSession } from '@s2s/contract';
import { eventually } from '@s2s/testing';
import { expectedCents } from '../e2e/bill.js';
import { api, expectCharged, startEdge, startStack } from '../e2e/stack.js';
import { launchChromium, skipWithoutChromium, speechWav } from './chromium.js';

const MODEL = 'local/echo-1';

interface PageResult {
  connected: boolean;
  connectError: string | null;
  callId: string | null;
  history: { role?: string; type: string; content?: { type: string; transcript?: string | null }[] }[];
  events: string[];
  errors: string[];
  inbound: { packetsReceived: number; totalSamplesReceived: number; jitter: number; packetsLost: number } | null;
  connection: string | null;
}

const PAGE = `<!doctype html><meta charset="utf-8"><script src="/agents.umd.js"></script><script>
const params = new URLSearchParams(location.search);
const result = { connected: false, connectError: null, callId: null, history: [], events: [], errors: [], inbound: null, connection: null };
window.result = result;
(async () => {
  const credential = await (await fetch('/credential', { method: 'POST' })).json();
  const { RealtimeAgent, RealtimeSession, OpenAIRealtimeWebRTC } = window.OpenAIAgentsRealtime;
  const agent = new RealtimeAgent({ name: 'Assistant', instructions: 'Answer briefly.' });
  const transport = new OpenAIRealtimeWebRTC({ baseUrl: params.get('calls') });
  const session = new RealtimeSession(agent, { transport, model: credential.model });
  session.on('history_updated', (h) => (result.history = h));
  session.on('error', (e) => result.errors.push(String(e.error?.error?.message ?? e.error?.message ?? e.error)));
  transport.on('*', (e) => { if (e && typeof e.type === 'string' && e.type.startsWith('output_audio_buffer.')) result.events.push(e.type); });
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
  let mint: () => Promise<{ value: string; model: string }> = () => Promise.reject(new Error('not ready'));
  const backend = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    if (url.pathname === '/webrtc.html') res.setHeader('content-type', 'text/html').end(PAGE);
    else if (url.pathname === '/agents.umd.js') res.setHeader('content-type', 'text/javascript').end(bundle);
    else if (url.pathname === '/credential' && req.method === 'POST') {
      mint().then(
        (c) => res.setHeader('content-type', 'application/json').end(JSON.stringify(c)),
        (err: Error) => res.writeHead(500).end(err.message),
      );
    } else res.writeHead(404).end();
  });
  backend.listen(0, '127.0.0.1');
  await once(backend, 'listening');
  t.teardown(() => new Promise((r) => backend.close(r)));
  const origin = `http://127.0.0.1:${(backend.address() as AddressInfo).port}`;

  const stack = await startStack(t, { relay: { REALTIME_ALLOWED_ORIGINS: origin, WEBRTC_ANNOUNCED_ADDRESSES: '127.0.0.1' } });
  const edge = await startEdge(t, stack);
  const { body: key } = await api<{ id: string; key: string; wallet_id: string }>(stack, 'POST', '/admin/v1/keys', {
    admin: true,
    body: { balance_cents: 1000 },
  });
  const models = await api<{ data: { id: string; pricing: Record<string, number> }[] }>(stack, 'GET', '/v1/models');
  const rate = models.body.data.find((m) => m.id === MODEL)!.pricing;
  let sessionId = '';
  mint = async () => {
    const res = await api<{ value: string; session: { id: string } }>(stack, 'POST', '/v1/realtime/client_secrets', {
      key: key.key,
      body: { session: { type: 'realtime', model: MODEL, instructions: 'Answer briefly.' } },
    });
    if (res.status !== 200) throw new Error(`mint failed: ${res.status}`);
    sessionId = res.body.session.id;
    return { value: res.body.value, model: MODEL };
  };

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
  t.equal(result.callId, sessionId, 'Location names the call: its voice session');
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

  // The backend hangs up with its API key: the session ends (client_closed → completed) and is settled.
  const hung = await api<VoiceSession>({ ...stack, baseUrl: edge.origin }, 'POST', `/v1/realtime/calls/${sessionId}/hangup`, {
    key: key.key,
  });
  t.equal(hung.status, 200);
  t.equal(hung.body.id, sessionId);
  const settled = await eventually(
    () => api<VoiceSession>(stack, 'GET', `/v1/voice/sessions/${sessionId}`, { key: key.key }),
    (r) => r.body.status === 'completed' && r.body.billing.reserved_cents === 0,
    15_000,
  );
  t.equal(settled.body.status, 'completed', 'the hangup ended the session; billing settled it');
  const usage = settled.body.usage;
  t.ok(usage.audio_in_ms > 1000, `audio_in_ms ${usage.audio_in_ms}: what was decoded from the track`);
  t.equal(usage.audio_out_ms, spokenMs, 'audio_out_ms: the echoed answer');
  const cents = expectedCents(rate, usage);
  t.equal(usage.billed_cents, cents, `billed to the cent (${cents})`);
  await expectCharged(t, stack, key.wallet_id, 1000, cents);
  await eventually(poll, (r) => r.connection !== 'connected', 10_000);
  t.same(pageErrors, []);
});
