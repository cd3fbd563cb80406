// POST /v1/realtime/calls and /hangup (decisions.md, "WebRTC"): a werift peer stands in for the browser; the
// local simulator answers; the media terminates in the relay. Refusals as ErrorResponses, nothing created.
import t, { type Test } from 'tap';
import OpenAI from 'openai';
import { mintClientSecret } from '@s2s/sessions';
import { BrowserPeer, UdpHop } from '@s2s/webrtc/testing';
import type { DbHandle } from '@s2s/db';
import {
  browserSession,
  series,
  countRows,
  createKey,
  createModel,
  eventually,
  sessionRow,
  setupRelay,
  type KeyFixture,
  type RelayEnv,
} from './helpers.js';

const MODEL = 'test/call-1';

function httpBase(env: { url: string }): string {
  return env.url.replace(/^ws/, 'http').replace(/\/v1\/realtime$/, '');
}

/** A session as POST /v1/realtime/client_secrets makes it, and its secret. */
async function secretSession(db: DbHandle, key: KeyFixture): Promise<{ sessionId: string; ek: string }> {
  const session = await browserSession(db, key, MODEL);
  const minted = await mintClientSecret({ ctx: { db }, input: { sessionId: session.id, ttlSeconds: 60, now: new Date() } });
  return { sessionId: session.id, ek: minted.value };
}

function post(env: RelayEnv, path: string, init: { body?: string | FormData; headers?: Record<string, string> }) {
  return fetch(`${httpBase(env)}${path}`, { method: 'POST', ...init });
}

async function browser(t: Test): Promise<BrowserPeer> {
  const b = new BrowserPeer();
  t.teardown(() => b.close());
  return b;
}

function events(b: BrowserPeer): { type: string; [k: string]: unknown }[] {
  return b.messages.map((m) => JSON.parse(m) as { type: string });
}

t.test('an ek_ call: offer answered, the spoken turn echoed on the track, events on oai-events, hangup settles it', async (t) => {
  const env = await setupRelay(t);
  await createModel(env.db, { id: MODEL });
  const key = await createKey(env.db, 1000);
  const { sessionId, ek } = await secretSession(env.db, key);
  const b = await browser(t);

  const res = await post(env, '/v1/realtime/calls', {
    body: await b.offer(),
    headers: { 'Content-Type': 'application/sdp', Authorization: `Bearer ${ek}` },
  });
  t.equal(res.status, 201);
  t.equal(res.headers.get('content-type'), 'application/sdp');
  t.equal(res.headers.get('location'), `/v1/realtime/calls/${sessionId}`);
  t.match(res.headers.get('x-request-id'), /^req_/);
  const answer = await res.text();
  t.match(answer, /a=ice-lite/);
  t.match(answer, new RegExp(` 127\\.0\\.0\\.1 ${env.webrtc.port} typ host`), 'the relay announces its one UDP port');
  await b.accept(answer);
  await b.connected();
  await eventually(
    () => events(b),
    (e) => e.some((x) => x.type === 'session.created'),
    5000,
  );
  t.equal(events(b)[0]!.type, 'session.created', 'session.created first, on oai-events');

  // A turn: one second of tone, then silence until the simulator's VAD ends it and the echo plays back.
  await b.speak(1000);
  const silence = b.speak(3000, 0);
  const done = await eventually(
    () => events(b),
    (e) => e.some((x) => x.type === 'output_audio_buffer.stopped'),
    8000,
  );
  await silence;
  const types = done.map((e) => e.type);
  t.ok(types.includes('response.done'), 'response.done');
  t.notOk(types.includes('response.output_audio.delta'), 'no audio delta on the channel: the audio is on the track');
  t.ok(types.indexOf('output_audio_buffer.started') < types.indexOf('output_audio_buffer.stopped'), 'started, then stopped');
  const responseId = (done.find((e) => e.type === 'response.done')?.response as { id: string }).id;
  t.equal(done.find((e) => e.type === 'output_audio_buffer.stopped')?.response_id, responseId, 'stopped names the response');
  const heardMs = b.received.length * 20;
  t.ok(heardMs >= 900, `the echo played on the track: ${b.received.length} packets`);

  b.channel.send(JSON.stringify({ type: 'input_audio_buffer.append', event_id: 'evt_1', audio: 'AAAA' }));
  const refused = await eventually(
    () => events(b),
    (e) => e.some((x) => x.type === 'error'),
    3000,
  );
  t.match(
    refused.find((e) => e.type === 'error'),
    { error: { code: 'invalid_event', event_id: 'evt_1' } },
    'append on the channel refused',
  );

  b.channel.send(
    JSON.stringify({
      type: 'session.update',
      event_id: 'evt_2',
      session: { type: 'realtime', audio: { input: { format: { type: 'audio/pcmu' } } } },
    }),
  );
  const formats = await eventually(
    () => events(b),
    (e) => e.filter((x) => x.type === 'error').length === 2,
    3000,
  );
  t.match(
    formats.filter((e) => e.type === 'error')[1],
    { error: { code: 'invalid_audio_format', param: 'session.audio.input.format', event_id: 'evt_2' } },
    'G.711 refused: the tracks carry Opus',
  );

  const hung = await post(env, `/v1/realtime/calls/${sessionId}/hangup`, { headers: { Authorization: `Bearer ${key.secret}` } });
  t.equal(hung.status, 200);
  t.match(await hung.json(), { id: sessionId, object: 'voice.session' });
  // The relay holding the call hears the end, closes the call and publishes its final usage.
  await eventually(
    () => b.pc.connectionState,
    (s) => s !== 'connected',
    5000,
  );
  const final = await eventually(
    () => env.checkpoints.filter((c) => c.session_id === sessionId && c.final),
    (c) => c.length === 1,
    5000,
  );
  const usage = final[0]!;
  t.ok(usage.audio_in_ms >= 3800 && usage.audio_in_ms <= 4100, `audio_in_ms ${usage.audio_in_ms}: what the track carried, decoded`);
  t.ok(usage.audio_out_ms >= 900, `audio_out_ms ${usage.audio_out_ms}: the echo`);
  const ends = env.endRequests.filter((m) => 'session_id' in m && m.session_id === sessionId);
  t.ok(ends.length >= 1, 'the end was announced');
  t.same(new Set(ends.map((m) => ('cause' in m ? m.cause : undefined))), new Set(['client_closed']), 'one cause: client_closed');
});

t.test("the openai package's calls.create (multipart sdp + session, API key) creates the session and answers", async (t) => {
  const env = await setupRelay(t);
  await createModel(env.db, { id: MODEL });
  const key = await createKey(env.db, 1000);
  const client = new OpenAI({ apiKey: key.secret, baseURL: `${httpBase(env)}/v1` });
  const b = await browser(t);
  const res = await client.realtime.calls.create({
    sdp: await b.offer(),
    session: { type: 'realtime', model: MODEL, instructions: 'Answer briefly.' },
  });
  t.equal(res.status, 201);
  const sessionId = res.headers.get('location')!.split('/').pop()!;
  t.match(sessionId, /^vs_/);
  await b.accept(await res.text());
  await b.connected();
  const created = await eventually(
    () => events(b),
    (e) => e.some((x) => x.type === 'session.created'),
    5000,
  );
  t.match(created[0], { type: 'session.created', session: { type: 'realtime', model: MODEL, instructions: 'Answer briefly.' } });
  t.equal((await sessionRow(env.db, sessionId))?.status, 'ready');

  await client.realtime.calls.hangup(sessionId);
  t.equal((await sessionRow(env.db, sessionId))?.terminal_status, 'cancelled', 'nothing said: to be cancelled');
  await eventually(
    () => b.pc.connectionState,
    (s) => s !== 'connected',
    5000,
  );
});

t.test('refusals are ErrorResponses and create nothing', async (t) => {
  const env = await setupRelay(t);
  await createModel(env.db, { id: MODEL });
  const key = await createKey(env.db, 1000);
  const poor = await createKey(env.db, 0);
  const { sessionId, ek } = await secretSession(env.db, key);
  const offer = await (await browser(t)).offer();
  const sdp = (body: string, auth?: string) =>
    post(env, '/v1/realtime/calls', {
      body,
      headers: { 'Content-Type': 'application/sdp', ...(auth ? { Authorization: `Bearer ${auth}` } : {}) },
    });
  const form = (parts: Record<string, string>, auth: string) => {
    const f = new FormData();
    for (const [k, v] of Object.entries(parts)) f.set(k, v);
    return post(env, '/v1/realtime/calls', { body: f, headers: { Authorization: `Bearer ${auth}` } });
  };
  const expect = async (res: Response, status: number, code: string, what: string) => {
    const body = (await res.json()) as { error: { code: string; type: string; request_id: string } };
    t.equal(res.status, status, `${what}: ${status}`);
    t.equal(body.error.code, code, `${what}: ${code}`);
    t.equal(body.error.request_id, res.headers.get('x-request-id'));
  };
  const session = JSON.stringify({ type: 'realtime', model: MODEL });

  await expect(await sdp(offer), 401, 'invalid_client_secret', 'no credential');
  await expect(await sdp(offer, `ek_${'A'.repeat(40)}`), 401, 'invalid_client_secret', 'unknown secret');
  await expect(await sdp(offer, key.secret), 400, 'invalid_request', 'an API key with a raw offer');
  await expect(
    await post(env, '/v1/realtime/calls', { body: offer, headers: { 'Content-Type': 'text/plain', Authorization: `Bearer ${ek}` } }),
    400,
    'invalid_request',
    'text/plain',
  );
  await expect(await sdp('v=0\r\nnonsense', ek), 400, 'invalid_request', 'malformed offer');
  await expect(await sdp(offer.replace(/m=audio[\s\S]*?(?=m=application)/, ''), ek), 400, 'invalid_request', 'no audio');
  await expect(await sdp(offer.replace(/m=application[\s\S]*$/, ''), ek), 400, 'invalid_request', 'no data channel');
  await expect(await sdp(offer.replace(/opus\/48000\/2/gi, 'PCMU/8000'), ek), 400, 'invalid_request', 'no Opus');
  await expect(await form({ sdp: offer, session }, `vr_sk_${'x'.repeat(40)}`), 401, 'invalid_vr_sk', 'unknown API key');
  await expect(await form({ sdp: offer, session }, ek), 401, 'invalid_vr_sk', 'a secret with the multipart form');
  await expect(await form({ sdp: offer }, key.secret), 400, 'invalid_request', 'no session part');
  await expect(await form({ sdp: offer, session: '{' }, key.secret), 400, 'invalid_request', 'session not JSON');
  await expect(
    await form({ sdp: offer, session: JSON.stringify({ type: 'realtime', model: 'no/such' }) }, key.secret),
    404,
    'model_not_found',
    'unknown model',
  );
  await expect(await form({ sdp: offer, session }, poor.secret), 402, 'insufficient_wallet_balance', 'a wallet that cannot cover it');
  await expect(await form({ sdp: 'nonsense', session }, key.secret), 400, 'invalid_request', 'multipart with a malformed offer');
  const reasoning = JSON.stringify({ type: 'realtime', model: MODEL, reasoning: { effort: 'low' }, truncation: 'auto' });
  const refused = await form({ sdp: offer, session: reasoning }, key.secret);
  t.match(await refused.clone().json(), { error: { message: /session\.reasoning/ } }, 'names the param');
  await expect(refused, 400, 'invalid_request', 'session.reasoning where the provider cannot honour it');
  t.equal(await countRows(env.db, 'voice_sessions'), 1, 'no session created by a refusal');
  t.equal(await countRows(env.db, 'session_attachments'), 0, 'no attachment');
  t.equal(env.webrtc.counters.callsAnswered, 0);

  await post(env, `/v1/realtime/calls/${sessionId}/hangup`, { headers: { Authorization: `Bearer ${key.secret}` } });
  await expect(await sdp(offer, ek), 410, 'session_expired', 'the session has ended');
  await expect(
    await post(env, `/v1/realtime/calls/${sessionId}/hangup`, { headers: { Authorization: `Bearer ${poor.secret}` } }),
    401,
    'invalid_vr_sk',
    'hangup by a key that does not own it',
  );
  await expect(
    await post(env, '/v1/realtime/calls/vs_nope/hangup', { headers: { Authorization: `Bearer ${key.secret}` } }),
    404,
    'session_not_found',
    'hangup of an unknown call',
  );
  await expect(await post(env, `/v1/realtime/calls/${sessionId}/hangup`, {}), 401, 'invalid_vr_sk', 'hangup without a key');

  const limited = await env.startRelay({ KEY_MAX_CREATES_PER_MINUTE: '1' });
  const limitedPost = (body: FormData) =>
    fetch(`${httpBase(limited)}/v1/realtime/calls`, { method: 'POST', body, headers: { Authorization: `Bearer ${key.secret}` } });
  const valid = () => {
    const f = new FormData();
    f.set('sdp', offer);
    f.set('session', session);
    return f;
  };
  t.equal((await limitedPost(valid())).status, 201, 'the first create of the minute');
  await expect(await limitedPost(valid()), 429, 'rate_limit_exceeded', 'the second (KEY_MAX_CREATES_PER_MINUTE=1)');

  const pre = await fetch(`${httpBase(env)}/v1/realtime/calls`, {
    method: 'OPTIONS',
    headers: { Origin: 'https://app.example', 'Access-Control-Request-Method': 'POST' },
  });
  t.equal(pre.status, 204, 'CORS preflight');
  t.equal(pre.headers.get('access-control-allow-origin'), 'https://app.example');
  t.match(pre.headers.get('access-control-expose-headers'), /Location/);
});

t.test('a peer that vanishes: the call fails after the grace and its session is ended and settled once', async (t) => {
  const env = await setupRelay(t, {}, {}, { livenessMs: 300, failAfterMs: 1000 });
  await createModel(env.db, { id: MODEL });
  const key = await createKey(env.db, 1000);
  const { sessionId, ek } = await secretSession(env.db, key);
  const hop = await UdpHop.open(env.webrtc.port);
  t.teardown(() => hop.close());
  const b = await browser(t);
  const res = await post(env, '/v1/realtime/calls', {
    body: await b.offer(),
    headers: { 'Content-Type': 'application/sdp', Authorization: `Bearer ${ek}` },
  });
  t.equal(res.status, 201);
  await b.accept((await res.text()).replace(new RegExp(` ${env.webrtc.port} typ host`, 'g'), ` ${hop.port} typ host`));
  await b.connected();
  await b.speak(1000);
  hop.cut();
  const row = await eventually(
    () => sessionRow(env.db, sessionId),
    (r) => r?.end_requested_at != null,
    10_000,
  );
  t.equal(row?.end_cause, 'client_closed');
  t.equal(row?.terminal_status, 'completed', 'ended after it spoke: completed');
  const final = await eventually(
    () => env.checkpoints.filter((c) => c.session_id === sessionId && c.final),
    (c) => c.length === 1,
    5000,
  );
  t.ok(final[0]!.audio_in_ms >= 900, `its final usage: ${final[0]!.audio_in_ms} ms decoded`);
  t.equal(env.webrtc.counters.iceFailures, 1, 'counted as an ICE failure');
  const page = await env.metrics.scrape();
  t.equal(series(page, 's2s_relay_webrtc_calls_total'), 1, 'metrics: one call answered');
  t.equal(series(page, 's2s_relay_webrtc_calls_total', { s2s_webrtc_failure: 'ice' }), 1, 'metrics: one ICE failure');
  t.ok(series(page, 's2s_relay_webrtc_packets_total', { s2s_webrtc_packets: 'received' }) >= 45, 'metrics: the packets it received');
  t.equal(series(page, 's2s_relay_webrtc_jitter_count'), 1, 'metrics: its jitter');
  const ends = env.endRequests.filter((m) => 'session_id' in m && m.session_id === sessionId);
  t.same(new Set(ends.map((m) => ('cause' in m ? m.cause : undefined))), new Set(['client_closed']), 'ended client_closed');
});

t.test('barge-in: speaking over the answer clears the track and truncates the item at what was played', async (t) => {
  const env = await setupRelay(t);
  await createModel(env.db, { id: MODEL });
  const key = await createKey(env.db, 1000);
  const { ek } = await secretSession(env.db, key);
  const b = await browser(t);
  const res = await post(env, '/v1/realtime/calls', {
    body: await b.offer(),
    headers: { 'Content-Type': 'application/sdp', Authorization: `Bearer ${ek}` },
  });
  await b.accept(await res.text());
  await b.connected();
  await b.speak(3000);
  const quiet = b.speak(1500, 0);
  await eventually(
    () => events(b),
    (e) => e.some((x) => x.type === 'output_audio_buffer.started'),
    8000,
  );
  await quiet;
  const heardBefore = b.received.length * 20;
  await b.speak(600);
  const after = await eventually(
    () => events(b),
    (e) => e.some((x) => x.type === 'conversation.item.truncated'),
    5000,
  );
  const silence = b.speak(1000, 0);
  const types = after.map((e) => e.type);
  t.ok(types.includes('output_audio_buffer.cleared'), 'output_audio_buffer.cleared');
  const truncated = after.find((e) => e.type === 'conversation.item.truncated') as unknown as { item_id: string; audio_end_ms: number };
  const audioItem =
    after.find((e) => e.type === 'response.output_audio.done') ?? after.find((e) => e.type === 'response.output_item.added');
  t.ok(
    truncated.audio_end_ms >= heardBefore - 100,
    `truncated at ${truncated.audio_end_ms} ms; ${heardBefore} ms had been sent when the caller spoke`,
  );
  t.ok(truncated.audio_end_ms <= heardBefore + 800, 'no later than what was sent until the speech was detected');
  t.ok(audioItem !== undefined, 'the assistant item');
  await silence;
  const packetsAtCut = b.received.length;
  await new Promise((r) => setTimeout(r, 300));
  t.ok(b.received.length - packetsAtCut <= 30, 'the track stopped carrying the cut answer');
});

t.test('output_audio_buffer.clear once the answer has played: cleared, and the played item is not truncated', async (t) => {
  const env = await setupRelay(t);
  await createModel(env.db, { id: MODEL });
  const key = await createKey(env.db, 1000);
  const { ek } = await secretSession(env.db, key);
  const b = await browser(t);
  const res = await post(env, '/v1/realtime/calls', {
    body: await b.offer(),
    headers: { 'Content-Type': 'application/sdp', Authorization: `Bearer ${ek}` },
  });
  await b.accept(await res.text());
  await b.connected();
  await b.speak(1000);
  await b.speak(1500, 0);
  await eventually(
    () => events(b),
    (e) => e.some((x) => x.type === 'output_audio_buffer.stopped'),
    8000,
  );
  b.channel.send(JSON.stringify({ type: 'output_audio_buffer.clear' }));
  const after = await eventually(
    () => events(b),
    (e) => e.some((x) => x.type === 'output_audio_buffer.cleared'),
    5000,
  );
  await new Promise((r) => setTimeout(r, 500));
  const types = events(b).map((e) => e.type);
  t.ok(
    after.some((e) => e.type === 'output_audio_buffer.cleared'),
    'output_audio_buffer.cleared answers the clear',
  );
  t.notOk(types.includes('conversation.item.truncated'), 'nothing was playing: no item is truncated');
  t.same(
    types.filter((x) => x === 'error'),
    [],
    'no error',
  );
});

t.test("the Agents SDK's opening session.update (semantic_vad, transcription): the turn's events reach oai-events", async (t) => {
  const env = await setupRelay(t);
  await createModel(env.db, { id: MODEL });
  const key = await createKey(env.db, 1000);
  const { ek } = await secretSession(env.db, key);
  const b = await browser(t);
  const res = await post(env, '/v1/realtime/calls', {
    body: await b.offer(),
    headers: { 'Content-Type': 'application/sdp', Authorization: `Bearer ${ek}` },
  });
  await b.accept(await res.text());
  await b.connected();
  b.channel.send(
    JSON.stringify({
      type: 'session.update',
      session: {
        type: 'realtime',
        instructions: 'Answer briefly.',
        model: MODEL,
        output_modalities: ['audio'],
        audio: {
          input: {
            format: { type: 'audio/pcm', rate: 24000 },
            noise_reduction: null,
            transcription: { model: 'gpt-4o-mini-transcribe' },
            turn_detection: { type: 'semantic_vad' },
          },
          output: { format: { type: 'audio/pcm', rate: 24000 }, speed: 1 },
        },
      },
    }),
  );
  b.channel.send(JSON.stringify({ type: 'session.update', session: { type: 'realtime', tracing: 'auto' } }));
  await eventually(
    () => events(b),
    (e) => e.filter((x) => x.type === 'session.updated').length === 2,
    5000,
  );
  await b.speak(1000);
  const silence = b.speak(3000, 0);
  const done = await eventually(
    () => events(b),
    (e) => e.some((x) => x.type === 'output_audio_buffer.stopped'),
    8000,
  );
  await silence;
  t.ok(
    done.some((e) => e.type === 'response.output_audio_transcript.done'),
    'the transcript',
  );
  t.ok(
    done.some((e) => e.type === 'output_audio_buffer.stopped'),
    'stopped',
  );
});
