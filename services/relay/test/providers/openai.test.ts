import { usageOf } from '@s2s/core';
import type { RealtimeServerEvent, RealtimeSessionCreateRequest } from 'openai/resources/realtime/realtime';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import t, { type Test } from 'tap';
import { pcmFrames, pcmTone } from '@s2s/local-provider';
import { WebSocketServer, type WebSocket } from 'ws';
import { OpenAIRealtimeAdapter, ProviderBase, UpstreamError, type MeteredUpstream } from '../../src/providers/index.js';
import { openAISessionUpdate } from '../../src/providers/openai/protocol.js';
import { Events, adapterSuite } from './adapter-suite.js';
import { openAIProtocolSpec } from './simulator-harness.js';
import { Audio } from '../../src/audio.js';

adapterSuite(
  t,
  openAIProtocolSpec('openai', (url, apiKey) => new OpenAIRealtimeAdapter({ url, apiKey })),
);

const KEY = 'sk-test-0123456789abcdefghijklmnop';

/** Any GA server event as the `openai` SDK types it, without the event_id a server adds. */
type ServerFrame = RealtimeServerEvent extends infer E ? (E extends RealtimeServerEvent ? Omit<E, 'event_id'> : never) : never;

/** A scriptable GA endpoint: answers session.update, records every message, sends whatever a test says. */
async function scripted(t: Test, opts: { status?: number; refuseSession?: boolean } = {}) {
  const received: Record<string, any>[] = [];
  const sockets: WebSocket[] = [];
  let handshakes = 0;
  const wss = new WebSocketServer({ noServer: true });
  const server = createServer();
  server.on('upgrade', (req, socket, head) => {
    handshakes++;
    if (opts.status) return void socket.end(`HTTP/1.1 ${opts.status} Nope\r\nContent-Length: 0\r\nConnection: close\r\n\r\n`);
    wss.handleUpgrade(req, socket, head, (ws) => {
      sockets.push(ws);
      ws.on('message', (d) => {
        const msg = JSON.parse(d.toString());
        received.push(msg);
        if (msg.type !== 'session.update' || received.filter((m) => m.type === 'session.update').length > 1) return;
        if (opts.refuseSession)
          ws.send(
            JSON.stringify({
              type: 'error',
              error: { type: 'invalid_request_error', code: 'invalid_value', message: `bad ${KEY}` },
            } satisfies ServerFrame),
          );
        else ws.send(JSON.stringify({ type: 'session.updated', session: { type: 'realtime' } } satisfies ServerFrame));
      });
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.teardown(async () => {
    for (const ws of wss.clients) ws.terminate();
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  });
  const url = `ws://127.0.0.1:${(server.address() as AddressInfo).port}/v1/realtime`;
  return {
    url,
    received,
    handshakes: () => handshakes,
    /** A GA server event, type-checked against the `openai` SDK's own types (the server adds event_id). */
    send: (m: ServerFrame) => sockets.forEach((ws) => ws.send(JSON.stringify(m))),
    /** Anything else: beta event names, which the GA types no longer list. */
    sendRaw: (m: Record<string, unknown>) => sockets.forEach((ws) => ws.send(JSON.stringify(m))),
    sendText: (text: string) => sockets.forEach((ws) => ws.send(text)),
    closeAll: (code: number) => sockets.forEach((ws) => ws.close(code)),
  };
}

async function openTo(t: Test, url: string, voice = 'shimmer'): Promise<{ up: MeteredUpstream; ev: Events }> {
  const ev = new Events();
  const up = await new ProviderBase(new OpenAIRealtimeAdapter({ url, apiKey: KEY }), { retries: 0 }).open(
    { providerModel: 'gpt-realtime', voice, turnDetection: { type: 'server_vad', silenceDurationMs: 650 } },
    ev.push,
    new AbortController().signal,
  );
  t.teardown(() => up.close());
  return { up, ev };
}

/** Lets the fake's events through: once the marker response is done, everything sent before it arrived. */
async function sync(fake: Awaited<ReturnType<typeof scripted>>, ev: Events, n: number): Promise<void> {
  fake.send({ type: 'response.created', response: { id: `sync_${n}` } });
  fake.send({ type: 'response.done', response: { id: `sync_${n}`, status: 'completed' } });
  await ev.wait('response_done', (e) => e.responseId === `sync_${n}`);
}

/** Waits until the fake has received a message of `type` (sent last by the test, as a marker). */
async function received(fake: Awaited<ReturnType<typeof scripted>>, type: string): Promise<void> {
  while (!fake.received.some((m) => m.type === type)) await new Promise((r) => setTimeout(r, 2));
}

t.test('openai: known voices pass, silence duration is sent, updateSession sends only what changed', async (t) => {
  const fake = await scripted(t);
  const { up } = await openTo(t, fake.url);
  t.same(fake.received[0]!.session.audio, {
    input: { format: { type: 'audio/pcm', rate: 24000 }, turn_detection: { type: 'server_vad', silence_duration_ms: 650 } },
    output: { format: { type: 'audio/pcm', rate: 24000 }, voice: 'shimmer' },
  });
  up.updateSession({ voice: 'marin' });
  up.updateSession({});
  up.commit();
  up.clear();
  await received(fake, 'input_audio_buffer.clear');
  const audioOnly = (voice?: string) => ({
    input: { format: { type: 'audio/pcm', rate: 24000 } },
    output: { format: { type: 'audio/pcm', rate: 24000 }, ...(voice ? { voice } : {}) },
  });
  t.same(fake.received.slice(1), [
    { type: 'session.update', event_id: 'gw_update_session_1', session: { type: 'realtime', audio: audioOnly('marin') } },
    { type: 'session.update', event_id: 'gw_update_session_2', session: { type: 'realtime', audio: audioOnly() } },
    { type: 'input_audio_buffer.commit', event_id: 'gw_commit_3' },
    { type: 'input_audio_buffer.clear' },
  ]);
});

t.test('openai: beta event names are understood; speech events and usage are mapped', async (t) => {
  const fake = await scripted(t);
  const { ev } = await openTo(t, fake.url);
  const audio = pcmTone(40);
  fake.send({ type: 'input_audio_buffer.speech_started', audio_start_ms: 120, item_id: 'i1' });
  fake.send({ type: 'input_audio_buffer.speech_stopped', audio_end_ms: 900, item_id: 'i1' });
  fake.send({ type: 'response.created', response: { id: 'r1' } });
  fake.sendRaw({ type: 'response.audio.delta', response_id: 'r1', item_id: 'a1', delta: audio.toString('base64') });
  fake.sendRaw({ type: 'response.audio.done', response_id: 'r1', item_id: 'a1' });
  fake.send({
    type: 'response.done',
    response: {
      id: 'r1',
      status: 'incomplete',
      usage: {
        total_tokens: 50,
        input_tokens: 30,
        output_tokens: 20,
        input_token_details: { audio_tokens: 25, text_tokens: 5 },
        output_token_details: { audio_tokens: 20 },
      },
    },
  });
  const done = await ev.wait('response_done');
  t.same(
    ev.all.map((e) => e.type),
    ['speech_started', 'speech_stopped', 'response_created', 'audio_delta', 'audio_done', 'response_done'],
  );
  t.same(ev.all[0], { type: 'speech_started', audioStartMs: 120, itemKey: 'i1' });
  t.same(ev.all[1], { type: 'speech_stopped', audioEndMs: 900, itemKey: 'i1' });
  t.ok(ev.deltas('r1').equals(audio));
  t.equal(done.status, 'incomplete');
  t.same(
    done.tokens,
    { inputAudioTokens: 25, inputTextTokens: 5, cachedInputTokens: 0, outputAudioTokens: 20, outputTextTokens: 0, transcribedMs: 0 },
    'every modality',
  );
  t.same(
    done.metered,
    usageOf({ audio_in_ms: 0, audio_out_ms: 40, input_audio_tokens: 25, input_text_tokens: 5, output_audio_tokens: 20 }),
    'metered: every counter kept (the text tokens too)',
  );
});

t.test('openai: an upstream error is relayed by code only; non-fatal while the socket stays, fatal when it closes', async (t) => {
  const fake = await scripted(t);
  const { ev } = await openTo(t, fake.url);
  fake.send({ type: 'error', error: { type: 'invalid_request_error', code: 'rate_limit_exceeded', message: `Key ${KEY} over quota` } });
  await sync(fake, ev, 1);
  fake.send({ type: 'error', error: { type: 'invalid_request_error', code: 'response_cancel_not_active', message: 'nothing to cancel' } });
  fake.send({ type: 'error', error: { type: 'server_error', code: 'weird code with spaces', message: KEY } });
  fake.closeAll(1011);
  await ev.wait('closed');
  t.same(
    ev.all.filter((e) => e.type === 'error' || e.type === 'closed'),
    [
      { type: 'error', message: 'provider openai reported an error (rate_limit_exceeded)', fatal: false },
      { type: 'error', message: 'provider openai reported an error (unknown)', fatal: true },
      { type: 'closed', unexpected: true },
    ],
    'the benign cancel race is dropped; the last error before the close is fatal',
  );
  t.notMatch(JSON.stringify(ev.all), KEY);
});

t.test('openai: barge-in after the reply finished truncates without cancelling; fully played → nothing', async (t) => {
  const fake = await scripted(t);
  const { up, ev } = await openTo(t, fake.url);
  fake.send({ type: 'response.created', response: { id: 'r1' } });
  fake.send({
    type: 'response.output_audio.delta',
    response_id: 'r1',
    item_id: 'a1',
    output_index: 0,
    content_index: 0,
    delta: pcmTone(300).toString('base64'),
  });
  fake.send({ type: 'response.done', response: { id: 'r1', status: 'completed' } });
  await ev.wait('response_done');
  up.cancelResponse('r1', 120.7);
  up.cancelResponse('r1', 500);
  up.cancelResponse('unknown', 10);
  up.commit();
  await received(fake, 'input_audio_buffer.commit');
  t.same(
    fake.received.slice(1),
    [
      { type: 'conversation.item.truncate', event_id: 'gw_truncate_item_1', item_id: 'a1', content_index: 0, audio_end_ms: 120 },
      { type: 'input_audio_buffer.commit', event_id: 'gw_commit_2' },
    ],
    'one truncate at the played ms; no cancel (nothing active), nothing when all was played or the id is unknown',
  );
});

t.test('openai: a refused session.update fails the connect as rejected, without retry', async (t) => {
  const fake = await scripted(t, { refuseSession: true });
  const err = await new ProviderBase(new OpenAIRealtimeAdapter({ url: fake.url, apiKey: KEY }), { retries: 2, backoffMs: 1 })
    .open({ providerModel: 'm' }, () => {}, new AbortController().signal)
    .catch((e: unknown) => e);
  t.equal((err as UpstreamError).kind, 'rejected');
  t.equal(fake.handshakes(), 1);
  t.notMatch((err as Error).message, KEY);
});

t.test('openai: handshake statuses: 403 unauthorized, 404 rejected (no retry), 503 retried', async (t) => {
  for (const [status, kind, attempts] of [
    [403, 'unauthorized', 1],
    [404, 'rejected', 1],
    [503, 'unavailable', 3],
  ] as const) {
    const fake = await scripted(t, { status });
    const err = await new ProviderBase(new OpenAIRealtimeAdapter({ url: fake.url, apiKey: KEY }), { retries: 2, backoffMs: 1 })
      .open({ providerModel: 'm' }, () => {}, new AbortController().signal)
      .catch((e: unknown) => e);
    t.ok(err instanceof UpstreamError);
    t.equal((err as UpstreamError).kind, kind, String(status));
    t.equal((err as UpstreamError).status, status);
    t.equal(fake.handshakes(), attempts, `${status}: ${attempts} attempt(s)`);
  }
});

t.test('openai live API (OPENAI_API_KEY)', { skip: !process.env.OPENAI_API_KEY && 'OPENAI_API_KEY is not set' }, async (t) => {
  const ev = new Events();
  const up = await new ProviderBase(new OpenAIRealtimeAdapter({ apiKey: process.env.OPENAI_API_KEY! }), { connectTimeoutMs: 15_000 }).open(
    { providerModel: process.env.OPENAI_REALTIME_MODEL ?? 'gpt-realtime', voice: 'alloy' },
    ev.push,
    new AbortController().signal,
  );
  t.teardown(() => up.close());
  for (const f of pcmFrames(pcmTone(1000))) up.appendAudio(Audio.ofPcm(f));
  up.commit();
  up.createResponse();
  const done = await ev.wait('response_done');
  t.ok(done.tokens, 'the provider reported usage');
  t.equal(up.usage().audio_in_ms, 1000);
});

t.test('openai: output audio deltas read from the bytes equal those parsed whole, in every form', async (t) => {
  const fake = await scripted(t);
  const { ev } = await openTo(t, fake.url);
  const pcm = Buffer.from(Array.from({ length: 96 }, (_, i) => (i * 37) & 0xff));
  const b64 = pcm.toString('base64');
  // Compact frames take the byte path; the rest (spaces, escapes, lenient base64, odd members) are parsed whole.
  const frames = [
    JSON.stringify({
      type: 'response.output_audio.delta',
      event_id: 'e1',
      response_id: 'r1',
      item_id: 'i1',
      output_index: 2,
      content_index: 1,
      delta: b64,
    }),
    JSON.stringify({ delta: b64, content_index: 0, type: 'response.audio.delta', response_id: 'r1', output_index: 0, item_id: 'i1' }),
    JSON.stringify({ type: 'response.output_audio.delta', response_id: 'r1', delta: b64 }),
    JSON.stringify({ type: 'response.output_audio.delta', response_id: 'r1', item_id: 7, delta: b64 }),
    JSON.stringify({ type: 'response.output_audio.delta', response_id: 'r1', item_id: '', delta: b64 }),
    JSON.stringify({
      type: 'response.output_audio.delta',
      response_id: 'r1',
      item_id: 'i1',
      output_index: -1,
      content_index: 1.5,
      delta: b64,
    }),
    JSON.stringify({ type: 'response.output_audio.delta', response_id: 'r1', item_id: 'i1', extra: { a: [1] }, delta: b64 }),
    JSON.stringify({ type: 'response.output_audio.delta', response_id: 'r1', item_id: 'i\u00e9', delta: b64 }),
    JSON.stringify({ type: 'response.output_audio.delta', response_id: 'r1', item_id: 'i1', delta: b64.slice(0, 8) + '\n' + b64.slice(8) }),
    JSON.stringify({
      type: 'response.output_audio.delta',
      response_id: 'r1',
      item_id: 'i1',
      delta: b64.replace(/\+/g, '-').replace(/\//g, '_'),
    }),
    JSON.stringify({ type: 'response.output_audio.delta', response_id: 'r1', item_id: 'i1', delta: b64.slice(0, -2) }),
    JSON.stringify({ type: 'response.output_audio.delta', response_id: 'r1', item_id: 'i1', delta: '' }),
    JSON.stringify({ type: 'response.output_audio.delta', response_id: '', item_id: 'i1', delta: b64 }),
    JSON.stringify({ type: 'response.output_audio.delta', response_id: 'r1', response_id2: 'x', item_id: 'i1', delta: b64 }),
    '{"type":"response.output_audio.delta","response_id":"r1","item_id":"i1","delta":"' + b64 + '","delta":"AAAA"}',
    '{"type": "response.output_audio.delta", "response_id": "r1", "item_id": "i1", "delta": "' + b64 + '"}',
    '{"type":"response.output_audio.delta","response_id":"r1","item_id":"i1","delta":"' + b64.slice(0, 4) + '\\u0041' + b64.slice(5) + '"}',
  ];
  const expected = frames.flatMap((text) => {
    const m = JSON.parse(text) as Record<string, unknown>;
    const responseId = typeof m.response_id === 'string' && m.response_id !== '' ? m.response_id : null;
    const bytes = typeof m.delta === 'string' ? Buffer.from(m.delta, 'base64') : null;
    if (!responseId || !bytes || bytes.length === 0) return [];
    const itemKey = typeof m.item_id === 'string' && m.item_id !== '' ? m.item_id : null;
    const n = (v: unknown) => (typeof v === 'number' && Number.isFinite(v) ? v : 0);
    return [
      itemKey === null
        ? { responseId, pcm: bytes.toString('hex') }
        : { responseId, pcm: bytes.toString('hex'), itemKey, outputIndex: n(m.output_index), contentIndex: n(m.content_index) },
    ];
  });
  for (const f of frames) fake.sendText(f);
  await sync(fake, ev, 1);
  const got = ev.all.flatMap((e) =>
    e.type !== 'audio_delta'
      ? []
      : [
          {
            responseId: e.responseId,
            pcm: e.audio.pcm.toString('hex'),
            ...(e.itemKey === undefined ? {} : { itemKey: e.itemKey, outputIndex: e.outputIndex, contentIndex: e.contentIndex }),
          },
        ],
  );
  t.same(got, expected);
  const bytes = ev.all.flatMap((e) => (e.type === 'audio_delta' ? [e.audio.bytes] : []));
  t.same(
    bytes,
    expected.map((e) => e.pcm.length / 2),
    'metered sizes are the decoded sizes',
  );
});

t.test("the current OpenAI session fields go upstream in OpenAI's own terms", async (t) => {
  const sent = openAISessionUpdate(
    {
      reasoning: { effort: 'low' },
      prompt: { id: 'pmpt_1', version: null, variables: { city: 'Paris' } },
      parallelToolCalls: false,
      truncation: { type: 'retention_ratio', retentionRatio: 0.8, tokenLimits: { postInstructions: 5000 } },
      include: ['item.input_audio_transcription.logprobs'],
    },
    false,
    'e1',
  );
  const expected = {
    reasoning: { effort: 'low' },
    prompt: { id: 'pmpt_1', version: null, variables: { city: 'Paris' } },
    parallel_tool_calls: false,
    truncation: { type: 'retention_ratio', retention_ratio: 0.8, token_limits: { post_instructions: 5000 } },
    include: ['item.input_audio_transcription.logprobs'],
  } satisfies Partial<RealtimeSessionCreateRequest>;
  t.match(sent, { type: 'session.update', event_id: 'e1', session: { type: 'realtime', ...expected } });
  t.match(openAISessionUpdate({ truncation: 'disabled', prompt: null }, false).session, { truncation: 'disabled', prompt: null });
  const none = openAISessionUpdate({ instructions: 'x' }, false).session;
  for (const k of ['reasoning', 'prompt', 'parallel_tool_calls', 'truncation', 'include']) t.notOk(k in none, `no ${k} unless set`);
});
