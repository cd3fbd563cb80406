// The OpenAI-compatible dialect through a real relay, PostgreSQL, NATS and the simulator (decisions.md,
// "The legacy path", "The OpenAI-compatible dialect"), and a client secret's settings applied at attach.
import t from 'tap';
import { REALTIME_PROTOCOL } from '@s2s/contract';
import { createSession, mintClientSecret } from '@s2s/sessions';
import WebSocket from 'ws';
import {
  Client,
  TEST_POLICY,
  attachUrl,
  countRows,
  createKey,
  createModel,
  eventually,
  frames,
  sessionRow,
  setupRelay,
  silence,
  tone,
  type KeyFixture,
} from './helpers.js';
import type { DbHandle } from '@s2s/db';

const MODEL = 'test/openai-1';

const next = async (c: Client, type?: string) => (await c.next(type)) as Record<string, any>;

async function open(url: string, protocols: string[], headers: Record<string, string>) {
  const ws = new WebSocket(url, protocols, { headers, perMessageDeflate: false });
  const client = new Client(ws);
  const upgrade = await new Promise<Record<string, string | string[] | undefined>>((resolve, reject) => {
    let h: Record<string, string | string[] | undefined> = {};
    ws.once('upgrade', (res) => (h = res.headers));
    ws.once('open', () => resolve(h));
    ws.once('unexpected-response', (_req, res) => reject(new Error(`refused ${res.statusCode}`)));
    ws.once('error', reject);
  });
  return { ws, client, upgrade };
}

async function secretSession(
  db: DbHandle,
  key: KeyFixture,
  settings: Parameters<typeof createSession>[0]['input']['clientSecretSettings'],
) {
  const { session } = await createSession({
    ctx: { db },
    input: {
      key: { keyId: key.keyId, walletId: key.walletId },
      request: { model: MODEL, mode: 'speech_to_speech' },
      clientSecretSettings: settings,
      traceId: 'b'.repeat(32),
      policy: TEST_POLICY,
    },
  });
  const ek = (await mintClientSecret({ ctx: { db }, input: { sessionId: session.id, ttlSeconds: 60, now: new Date() } })).value;
  return { session, ek };
}

t.test('the legacy path without svc-realtime-v1 speaks OpenAI GA: an audio turn answered in `delta`, usage in OpenAI terms', async (t) => {
  const env = await setupRelay(t);
  await createModel(env.db, { id: MODEL });
  const key = await createKey(env.db, 1000);
  const legacy = `${env.url}?model=${MODEL}`;

  const bare = await open(legacy, [], { Authorization: `Bearer ${key.secret}` });
  t.teardown(() => bare.ws.terminate());
  t.equal(bare.ws.protocol, '', 'nothing offered, nothing echoed');
  t.equal(bare.upgrade['deprecation'], 'true');
  const created = await next(bare.client);
  t.match(created, {
    type: 'session.created',
    session: {
      type: 'realtime',
      object: 'realtime.session',
      model: MODEL,
      audio: { output: { format: { type: 'audio/pcm', rate: 24000 } } },
    },
  });
  t.match(created.session, { id: /^vs_/ });
  t.equal((await next(bare.client)).type, 'conversation.created');

  bare.client.send({
    type: 'session.update',
    event_id: 'u1',
    session: { type: 'realtime', model: 'gpt-realtime-2.1', instructions: 'Echo.', tracing: 'auto', audio: { output: { voice: 'marin' } } },
  });
  const updated = await next(bare.client, 'session.updated');
  t.match(
    updated.session,
    { type: 'realtime', model: MODEL, instructions: 'Echo.', audio: { output: { voice: 'marin' } } },
    'the model stays',
  );

  for (const f of frames(tone(600))) bare.client.append(f);
  for (const f of frames(silence(700))) bare.client.append(f);
  const started = await next(bare.client, 'input_audio_buffer.speech_started');
  const stopped = await next(bare.client, 'input_audio_buffer.speech_stopped');
  const committed = await next(bare.client, 'input_audio_buffer.committed');
  t.match(started.item_id, /^item_/, 'speech names the user item it becomes');
  t.equal(stopped.item_id, started.item_id);
  t.equal(committed.item_id, started.item_id, 'the committed item is that one');
  const delta = await next(bare.client, 'response.output_audio.delta');
  t.match(delta, { response_id: /^resp_/, item_id: /^item_/, output_index: 0, content_index: 0, delta: /^[A-Za-z0-9+/]+=*$/ });
  t.notOk('audio' in delta);
  const done = await next(bare.client, 'response.done');
  t.match(done.response, {
    object: 'realtime.response',
    status: 'completed',
    usage: {
      input_tokens: Number,
      output_tokens: Number,
      input_token_details: { audio_tokens: Number },
      output_token_details: { audio_tokens: Number },
    },
  });
  const u = done.response.usage;
  t.ok(u.output_token_details.audio_tokens > 0, 'output audio tokens counted');
  t.equal(u.total_tokens, u.input_tokens + u.output_tokens);

  const offered = await open(legacy, ['realtime', 'openai-beta.realtime-v1'], { Authorization: `Bearer ${key.secret}` });
  t.teardown(() => offered.ws.terminate());
  t.equal(offered.ws.protocol, 'realtime', 'realtime echoed when offered');
  t.equal((await next(offered.client)).session.type, 'realtime');
});

t.test('OpenAI-dialect refusals name the GA param, reach no upstream and bill nothing', async (t) => {
  const env = await setupRelay(t);
  await createModel(env.db, { id: MODEL });
  const key = await createKey(env.db, 1000);
  const { client, ws } = await open(`${env.url}?model=${MODEL}`, ['realtime'], { Authorization: `Bearer ${key.secret}` });
  t.teardown(() => ws.terminate());
  const created = await next(client, 'session.created');
  const refusals: [Record<string, unknown>, string, string][] = [
    [
      { type: 'session.update', event_id: 'r1', session: { type: 'realtime', audio: { input: { format: { type: 'audio/opus' } } } } },
      'invalid_audio_format',
      'session.audio.input.format',
    ],
    [
      { type: 'session.update', event_id: 'r2', session: { type: 'realtime', temperature: 0.5 } },
      'unsupported_parameter',
      'session.temperature',
    ],
    [
      {
        type: 'session.update',
        event_id: 'r3',
        session: { type: 'realtime', tools: [{ type: 'mcp', server_label: 'x', server_url: 'https://x.example' }] },
      },
      'unsupported_parameter',
      'session.tools[0]',
    ],
    [
      {
        type: 'conversation.item.create',
        event_id: 'r4',
        item: { type: 'message', role: 'user', content: [{ type: 'input_image', image_url: 'data:' }] },
      },
      'unsupported_parameter',
      'item.content[0]',
    ],
    [{ type: 'input_audio_buffer.commit', event_id: 'r5' }, 'input_audio_buffer_commit_empty', 'null'],
  ];
  for (const [event, code, param] of refusals) {
    client.send(event);
    const e = await next(client, 'error');
    t.match(e.error, { code, event_id: event.event_id }, code);
    t.equal(String(e.error.param), param, `param of ${String(event.event_id)}`);
  }
  t.same(
    env.simEvents.map((e) => e.event.type).filter((type) => type !== 'session.update'),
    [],
    'no refused event reached the simulator',
  );
  t.equal((await sessionRow(env.db, created.session.id))?.status, 'ready', 'a refused event does not activate the session');
  ws.close();
  await eventually(
    () => env.checkpoints.some((c) => c.session_id === created.session.id && c.final),
    (v) => v,
  );
  const final = env.checkpoints.find((c) => c.session_id === created.session.id && c.final)!;
  t.match(
    final,
    { audio_in_ms: 0, audio_out_ms: 0, input_audio_tokens: 0, output_audio_tokens: 0, input_text_tokens: 0, cached_input_tokens: 0 },
    'nothing billed',
  );
});

t.test("a client secret's settings open the session in both dialects", async (t) => {
  const env = await setupRelay(t);
  await createModel(env.db, { id: MODEL });
  const key = await createKey(env.db, 1000);
  const settings = {
    instructions: 'You are terse.',
    audio: { output: { voice: 'cedar' }, input: { transcription: { model: 'whisper-1' } } },
  };

  const a = await secretSession(env.db, key, settings);
  const ga = await open(`${env.url}?model=${MODEL}`, ['realtime', `openai-insecure-api-key.${a.ek}`], {});
  t.teardown(() => ga.ws.terminate());
  const created = await next(ga.client, 'session.created');
  t.match(created.session, {
    id: a.session.id,
    model: MODEL,
    instructions: 'You are terse.',
    audio: { output: { voice: 'cedar' }, input: { transcription: { model: 'whisper-1' } } },
  });
  const before = env.simEvents.length;
  for (const f of frames(tone(100))) ga.client.append(f);
  await eventually(
    () => env.simEvents.slice(before).some((e) => e.event.type === 'input_audio_buffer.append'),
    (v) => v,
  );
  const opening = env.simEvents.slice(before).find((e) => e.event.type === 'session.update')?.event as Record<string, any> | undefined;
  t.match(
    opening?.session,
    { instructions: 'You are terse.', audio: { input: { transcription: { model: 'whisper-1' } } } },
    'the upstream opened with them',
  );

  const b = await secretSession(env.db, key, settings);
  const svc = await open(attachUrl(env.url, b.session.id), [REALTIME_PROTOCOL], { Authorization: `Bearer ${b.ek}` });
  t.teardown(() => svc.ws.terminate());
  t.equal((await next(svc.client)).type, 'session.created');
  const mark = env.simEvents.length;
  svc.client.send({
    type: 'conversation.item.create',
    item: { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'hi' }] },
  });
  await next(svc.client, 'conversation.item.added');
  const svcOpening = env.simEvents.slice(mark).find((e) => e.event.type === 'session.update')?.event as Record<string, any> | undefined;
  t.match(svcOpening?.session, { instructions: 'You are terse.' }, 'svc-realtime-v1 too');
  svc.client.send({ type: 'session.update', event_id: 'v', session: { instructions: 'Other.' } });
  t.match((await next(svc.client, 'session.updated')).session, { voice: 'cedar', instructions: 'Other.' }, 'later updates start from them');
  t.equal(await countRows(env.db, 'voice_sessions'), 2);
});
