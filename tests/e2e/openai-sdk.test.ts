// Unmodified OpenAI Realtime clients against the real gateway processes (issue 10, Tests; decisions.md,
// "The OpenAI-compatible dialect"): each changes only its URL (or base URL) and its key.
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import t, { type Test } from 'tap';
import { CreateKeyResponse, VoiceSession } from '@s2s/contract';
import { ZERO_USAGE, type Usage } from '@s2s/core';
import { checkLedgerInvariants } from '@s2s/db/testing';
import { BYTES_PER_MS, pcmFrames, pcmSilence, pcmTone } from '@s2s/local-provider';
import { eventually, sleep } from '@s2s/testing';
import { RealtimeAgent, RealtimeSession, tool, type RealtimeItem } from '@openai/agents-realtime';
import WebSocket from 'ws';
import { expectedCents } from './bill.js';
import { api, startEdge, startStack, type Stack } from './stack.js';

const MODEL = 'local/echo-1';
type Raw = Record<string, any>;

async function setup(t: Test, stack: Stack) {
  const key = CreateKeyResponse.parse(
    (await api<CreateKeyResponse>(stack, 'POST', '/admin/v1/keys', { admin: true, body: { balance_cents: 10_000, label: 'sdk' } })).body,
  );
  const models = await api<{ data: { id: string; pricing: Record<string, number> }[] }>(stack, 'GET', '/v1/models');
  const rate = models.body.data.find((m) => m.id === MODEL)!.pricing;
  t.ok(rate, 'the catalog prices the model');
  return { key, rate };
}

/** OpenAI's usage of one response.done back in the gateway's counters (cached tokens are reported as text). */
function countersOf(usage: Raw): Omit<Usage, 'audio_in_ms' | 'audio_out_ms' | 'transcribed_ms'> {
  const inD = usage.input_token_details ?? {};
  const outD = usage.output_token_details ?? {};
  return {
    input_audio_tokens: inD.audio_tokens ?? 0,
    input_text_tokens: (inD.text_tokens ?? 0) - (inD.cached_tokens ?? 0),
    cached_input_tokens: inD.cached_tokens ?? 0,
    output_audio_tokens: outD.audio_tokens ?? 0,
    output_text_tokens: outD.text_tokens ?? 0,
  };
}

/** The settled session (the legacy path ends it when its socket closes), its bill checked to the cent. */
async function checkSettled(
  t: Test,
  stack: Stack,
  key: CreateKeyResponse,
  sessionId: string,
  rate: Record<string, number>,
  expected: Usage,
) {
  const settled = await eventually(
    async () =>
      (
        await api<VoiceSession & { usage: Usage & { billed_cents: number } }>(stack, 'GET', `/v1/voice/sessions/${sessionId}`, {
          key: key.key,
        })
      ).body,
    (s) => s.status === 'completed',
    20_000,
  );
  t.equal(settled.status, 'completed', 'settled when the socket closed');
  const keys = Object.keys(ZERO_USAGE) as (keyof Usage)[];
  t.same(Object.fromEntries(keys.map((k) => [k, settled.usage[k]])), expected, 'every counter as the client measured and read it');
  const cents = expectedCents(rate, expected);
  t.ok(cents > 0);
  t.equal(settled.usage.billed_cents, cents, 'billed to the cent');
  t.equal(settled.billing.reserved_cents, 0);
  t.same(await checkLedgerInvariants(stack.db.db.pool), []);
}

t.test(
  '@openai/agents-realtime RealtimeSession (WebSocket transport): audio, transcripts, a tool, barge-in, usage, the bill',
  async (t) => {
    // Replies paced at one 100 ms delta per 100 ms, so that speech lands while the model is still talking.
    const stack = await startStack(t, { provider: { LOCAL_PROVIDER_REPLY_INTERVAL_MS: '100' } });
    const edge = await startEdge(t, stack);
    const { key, rate } = await setup(t, stack);

    const lookup = tool({
      name: 'lookup_order',
      description: 'The status of an order.',
      parameters: {
        type: 'object',
        properties: { order_id: { type: 'string' } },
        required: ['order_id'],
        additionalProperties: false,
      },
      strict: true,
      execute: async (input) =>
        JSON.stringify({ order_id: (input as { order_id: string }).order_id, status: 'shipped', arrives: 'tomorrow' }),
    });
    const agent = new RealtimeAgent({ name: 'courier', instructions: "You are a courier's assistant.", tools: [lookup] });
    const session = new RealtimeSession(agent, { transport: 'websocket', model: MODEL });
    const errors: unknown[] = [];
    session.on('error', (e) => errors.push(e));
    let audioBytes = 0;
    session.on('audio', (e) => (audioBytes += e.data.byteLength));
    let interrupted = 0;
    session.transport.on('audio_interrupted', () => interrupted++);
    const toolEnds: string[] = [];
    session.on('agent_tool_end', (_ctx, _agent, _tool, result) => toolEnds.push(result));
    const raw: Raw[] = [];
    session.transport.on('*', (e: Raw) => raw.push(e));
    t.teardown(() => session.close());

    // The only changes from the SDK's own example: the URL and the key.
    await session.connect({ apiKey: key.key, url: `${edge.origin.replace(/^http/, 'ws')}/v1/realtime?model=${MODEL}` });
    const seen = (type: string, n = 1) =>
      eventually(
        () => raw.filter((e) => e.type === type),
        (l) => l.length >= n,
        20_000,
      );
    const created = (await seen('session.created'))[0]!;
    t.match(created.session, { type: 'realtime', model: MODEL });
    const sessionId = created.session.id as string;
    // The SDK may update the session more than once while it connects: the one carrying the agent is awaited.
    const updates = await eventually(
      () => raw.filter((e) => e.type === 'session.updated').map((e) => e.session as { instructions?: string }),
      (l) => l.some((s) => s.instructions === "You are a courier's assistant."),
      20_000,
    );
    t.match(updates.find((s) => s.instructions === "You are a courier's assistant.") ?? updates.at(-1), {
      instructions: "You are a courier's assistant.",
      tools: [{ type: 'function', name: 'lookup_order' }],
      audio: { input: { transcription: { model: 'gpt-4o-mini-transcribe' } } },
    });

    let sent = 0;
    const speak = (ms: number) => {
      for (const f of pcmFrames(Buffer.concat([pcmTone(ms), pcmSilence(500)]))) {
        session.sendAudio(f.buffer.slice(f.byteOffset, f.byteOffset + f.length) as ArrayBuffer);
        sent += f.length;
      }
    };

    // 1. A spoken turn: the model's audio arrives through the SDK's audio events, both transcripts in its history.
    speak(600);
    await seen('response.done', 1);
    const transcriptOf = (item: RealtimeItem | undefined) =>
      item && item.type === 'message'
        ? item.content.map((c) => ('transcript' in c ? c.transcript : 'text' in c ? c.text : '')).join('')
        : '';
    const userTurn = await eventually(
      () => session.history.find((i) => i.type === 'message' && i.role === 'user' && transcriptOf(i) !== ''),
      (i) => i !== undefined,
      10_000,
    );
    t.match(transcriptOf(userTurn), /^speech \d+ ms$/, "the user's transcript in the SDK's history");
    const answer = await eventually(
      () => session.history.find((i) => i.type === 'message' && i.role === 'assistant' && transcriptOf(i) !== ''),
      (i) => i !== undefined,
      10_000,
    );
    t.equal(transcriptOf(answer), transcriptOf(userTurn), "the model's transcript too (the simulator echoes)");
    t.ok(audioBytes > 0, 'audio played through the SDK');

    // 2. A tool round trip: the model calls lookup_order, the SDK runs tool() and sends its output back.
    session.sendMessage('call lookup_order {"order_id":"42"}');
    await eventually(
      () => toolEnds.length,
      (n) => n >= 1,
      20_000,
    );
    t.same(JSON.parse(toolEnds[0]!), { order_id: '42', status: 'shipped', arrives: 'tomorrow' });
    const call = session.history.find((i) => i.type === 'function_call');
    t.match(call, { type: 'function_call', name: 'lookup_order', arguments: '{"order_id":"42"}' });

    // 3. Barge-in: speech while the model speaks the tool's result.
    const deltasBefore = raw.filter((e) => e.type === 'response.output_audio.delta').length;
    await eventually(
      () => raw.filter((e) => e.type === 'response.output_audio.delta').length,
      (n) => n > deltasBefore + 1,
      20_000,
    );
    const donesBefore = raw.filter((e) => e.type === 'response.done').length;
    speak(500);
    await seen('conversation.item.truncated');
    await seen('response.done', donesBefore + 2);
    t.ok(interrupted >= 1, 'the SDK interrupted its playback');
    const cut = raw.filter((e) => e.type === 'response.done')[donesBefore]!;
    t.equal(cut.response.status, 'cancelled', 'the spoken result was cut short');
    await sleep(300);
    t.same(errors.concat(raw.filter((e) => e.type === 'error')), [], 'no error event in the whole session');

    // 4. Usage, as the SDK reads it, equals the responses' usage; then the bill.
    const dones = raw.filter((e) => e.type === 'response.done');
    const tokens = dones
      .map((d) => countersOf(d.response.usage))
      .reduce((a, b) => {
        const out = { ...a };
        for (const k of Object.keys(b) as (keyof typeof b)[]) out[k] += b[k];
        return out;
      });
    t.equal(session.usage.requests, dones.length, 'one usage report per response');
    t.equal(session.usage.inputTokens, tokens.input_audio_tokens + tokens.input_text_tokens + tokens.cached_input_tokens);
    t.equal(session.usage.outputTokens, tokens.output_audio_tokens + tokens.output_text_tokens);
    t.ok(tokens.output_audio_tokens > 0 && tokens.input_text_tokens > 0, 'audio and text counted');
    const received = raw
      .filter((e) => e.type === 'response.output_audio.delta')
      .reduce((n, e) => n + Buffer.from(e.delta as string, 'base64').length, 0);
    t.equal(audioBytes, received, 'every delta reached the SDK as audio');

    const transcribed = (await api<VoiceSession & { usage: Usage }>(stack, 'GET', `/v1/voice/sessions/${sessionId}`, { key: key.key })).body
      .usage.transcribed_ms;
    session.close();
    await checkSettled(t, stack, key, sessionId, rate, {
      audio_in_ms: sent / BYTES_PER_MS,
      audio_out_ms: received / BYTES_PER_MS,
      ...tokens,
      transcribed_ms: transcribed,
    });
    t.ok(transcribed > 0 && transcribed <= sent / BYTES_PER_MS, 'the transcribed input is input');
  },
);

/** A self-signed certificate for 127.0.0.1, made with openssl for this test. */
function selfSigned(): { cert: string; key: string } {
  const dir = mkdtempSync(join(tmpdir(), 's2s-tls-'));
  const cert = join(dir, 'cert.pem');
  const key = join(dir, 'key.pem');
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-days',
      '1',
      '-subj',
      '/CN=localhost',
      '-addext',
      'subjectAltName=DNS:localhost,IP:127.0.0.1',
      '-keyout',
      key,
      '-out',
      cert,
    ],
    { stdio: 'ignore' },
  );
  return { cert, key };
}

t.test("the openai package's OpenAIRealtimeWS through the edge's TLS: only baseURL and apiKey change", async (t) => {
  const stack = await startStack(t);
  const tls = selfSigned();
  const edge = await startEdge(t, stack, tls);
  const { key, rate } = await setup(t, stack);

  // The client runs as its own process, trusting the test's certificate the way Node does (NODE_EXTRA_CA_CERTS).
  const script = fileURLToPath(new URL('./openai-ws-client.ts', import.meta.url));
  const child = spawn(process.execPath, ['--import', 'tsx', script], {
    env: { ...process.env, NODE_EXTRA_CA_CERTS: tls.cert, S2S_BASE_URL: `${edge.origin}/v1`, S2S_API_KEY: key.key, S2S_MODEL: MODEL },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  child.stdout.on('data', (c: Buffer) => (out += c.toString()));
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  t.equal(code, 0, 'the client finished');
  const report = JSON.parse(out.trim().split('\n').at(-1)!) as {
    url: string;
    sessionId: string;
    model: string;
    sentBytes: number;
    audioBytes: number;
    errors: unknown[];
    transcripts: string[];
    usages: Raw[];
  };
  t.match(report.url, new RegExp(`^wss://127\\.0\\.0\\.1:${edge.port}/v1/realtime\\?model=`), 'the SDK derived wss:// from the base URL');
  t.equal(report.model, MODEL);
  t.same(report.errors, []);
  t.ok(report.audioBytes > 0, 'audio received in response.output_audio.delta');
  t.match(report.transcripts, [/^speech \d+ ms$/]);
  const tokens = report.usages.map(countersOf).reduce((a, b) => {
    const o = { ...a };
    for (const k of Object.keys(b) as (keyof typeof b)[]) o[k] += b[k];
    return o;
  });
  const transcribed = (await api<VoiceSession & { usage: Usage }>(stack, 'GET', `/v1/voice/sessions/${report.sessionId}`, { key: key.key }))
    .body.usage.transcribed_ms;
  await checkSettled(t, stack, key, report.sessionId, rate, {
    audio_in_ms: report.sentBytes / BYTES_PER_MS,
    audio_out_ms: report.audioBytes / BYTES_PER_MS,
    ...tokens,
    transcribed_ms: transcribed,
  });
});

/** Opens a raw OpenAI-dialect socket (what the SDKs do in a browser: the secret in a subprotocol). */
function dial(
  url: string,
  protocols: string[],
  origin?: string,
): Promise<{ ws: WebSocket; events: Raw[] } | { status: number; body: Raw }> {
  const ws = new WebSocket(url, protocols, { perMessageDeflate: false, ...(origin ? { origin } : {}) });
  const events: Raw[] = [];
  ws.on('message', (d) => events.push(JSON.parse(d.toString()) as Raw));
  return new Promise((resolve, reject) => {
    ws.once('open', () => resolve({ ws, events }));
    ws.once('error', reject);
    ws.once('unexpected-response', (_req, res) => {
      let text = '';
      res.on('data', (c: Buffer) => (text += c.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) as Raw }));
    });
  });
}

t.test(
  'client secrets through the edge: settings applied at attach; expired, foreign, HTTP-route, origin and unsupported refusals',
  async (t) => {
    const stack = await startStack(t, { relay: { REALTIME_ALLOWED_ORIGINS: 'https://app.example' } });
    const edge = await startEdge(t, stack);
    t.match(edge.output.join('\n'), /"handoff":true/, 'the edge hands connections over to the relay, as in npm start');
    const { key } = await setup(t, stack);
    const post = async (path: string, body: unknown, bearer: string) => {
      const res = await fetch(`${edge.origin}${path}`, {
        method: 'POST',
        headers: { Authorization: `Bearer ${bearer}`, 'Content-Type': 'application/json' },
        body: JSON.stringify(body),
      });
      return { status: res.status, body: (await res.json()) as Raw };
    };
    const minted = await post(
      '/v1/realtime/client_secrets',
      { session: { type: 'realtime', model: MODEL, instructions: 'Be terse.', audio: { output: { voice: 'cedar' } } } },
      key.key,
    );
    t.equal(minted.status, 200);
    const ek = minted.body.value as string;
    const realtime = `${edge.origin.replace(/^http/, 'ws')}/v1/realtime`;

    const refusedHttp = await post('/v1/voice/sessions', { model: MODEL, mode: 'speech_to_speech' }, ek);
    t.equal(refusedHttp.status, 401, 'an ek_ opens no HTTP route');

    const wrongOrigin = await dial(`${realtime}?model=${MODEL}`, ['realtime', `openai-insecure-api-key.${ek}`], 'https://evil.example');
    t.match(wrongOrigin, { status: 403, body: { error: { code: 'origin_not_allowed' } } }, "the relay reads the browser's Origin");
    const opened = await dial(`${realtime}?model=${MODEL}`, ['realtime', `openai-insecure-api-key.${ek}`], 'https://app.example');
    if (!('ws' in opened)) throw new Error(`refused ${opened.status}`);
    t.equal(opened.ws.protocol, 'realtime', 'the secret is never echoed');
    await eventually(
      () => opened.events.length,
      (n) => n >= 1,
    );
    t.match(opened.events[0], {
      type: 'session.created',
      session: { id: minted.body.session.id, model: MODEL, instructions: 'Be terse.', audio: { output: { voice: 'cedar' } } },
    });
    opened.ws.send(
      JSON.stringify({
        type: 'session.update',
        event_id: 'f',
        session: { type: 'realtime', audio: { input: { format: { type: 'audio/pcm', rate: 16000 } } } },
      }),
    );
    opened.ws.send(JSON.stringify({ type: 'session.update', event_id: 'g', session: { type: 'realtime', temperature: 0.8 } }));
    const errs = await eventually(
      () => opened.events.filter((e) => e.type === 'error'),
      (l) => l.length >= 2,
    );
    t.match(errs, [
      { error: { code: 'invalid_audio_format', param: 'session.audio.input.format', event_id: 'f' } },
      { error: { code: 'unsupported_parameter', param: 'session.temperature', event_id: 'g' } },
    ]);
    opened.ws.close();

    // Another session's secret on this session, and an expired one.
    const other = (await post('/v1/voice/sessions', { model: MODEL, mode: 'speech_to_speech' }, key.key)).body;
    const target = (await post('/v1/voice/sessions', { model: MODEL, mode: 'speech_to_speech' }, key.key)).body;
    const otherEk = (await post(`/v1/voice/sessions/${other.id}/client_secrets`, {}, key.key)).body.value as string;
    const foreign = await dial(`${realtime}?session_id=${target.id}`, ['svc-realtime-v1', `svc-realtime-v1.auth.${otherEk}`]);
    t.match(foreign, { status: 401, body: { error: { code: 'invalid_client_secret' } } }, "another session's secret");
    const targetEk = (await post(`/v1/voice/sessions/${target.id}/client_secrets`, {}, key.key)).body.value as string;
    await stack.db.db.pool.query(
      `UPDATE client_secrets SET created_at = now() - interval '2 minutes', expires_at = now() - interval '1 minute' WHERE session_id = $1`,
      [target.id],
    );
    const expired = await dial(`${realtime}?model=${MODEL}`, ['realtime', `openai-insecure-api-key.${targetEk}`]);
    t.match(expired, { status: 401, body: { error: { code: 'invalid_client_secret' } } }, 'expired');
  },
);
