import t from 'tap';
import type { Test } from 'tap';
import { checkpointRoutes } from '@s2s/contract';
import { USAGE_COUNTERS } from '@s2s/core';
import { startLocalProvider, type ReceivedClientEvent } from '@s2s/local-provider';
import {
  attach,
  attachUrl,
  createKey,
  createModel,
  eventually,
  frames,
  newSession,
  series,
  setupRelay,
  silence,
  tone,
  type RelayEnv,
} from './helpers.js';
import type { Client, ServerEventLike } from './helpers.js';

const INSTRUCTIONS = 'You keep numbers in mind.';
const textTokens = (s: string) => Math.ceil(s.length / 4);

async function agentSession(
  t: Test,
  env: RelayEnv,
  fallbackRoutes: { provider: string; provider_model: string }[] = [],
): Promise<{ client: Client; sessionId: string }> {
  await createModel(env.db, { id: 'local/keeper', providerModel: 'keeper-1' });
  await env.db.pool.query(`UPDATE catalog_models SET fallback_routes = $2::jsonb WHERE id = $1`, [
    'local/keeper',
    JSON.stringify(fallbackRoutes),
  ]);
  const key = await createKey(env.db, 10_000);
  const s = await newSession(env.db, key, 'local/keeper');
  const { client } = await attach(attachUrl(env.url, s.id), key.secret);
  t.teardown(() => client.close());
  client.send({
    type: 'session.update',
    session: { instructions: INSTRUCTIONS, audio: { input: { transcription: { model: 'gpt-4o-mini-transcribe' } } } },
  });
  await client.next('session.updated');
  return { client, sessionId: s.id };
}

/** One spoken turn (speech then silence, so the VAD ends it) and its answer. */
async function speak(client: Client, speechMs: number): Promise<{ done: ServerEventLike; audioBytes: number }> {
  const from = client.events.length;
  for (const f of frames(Buffer.concat([tone(speechMs), silence(600)]))) client.append(f);
  const done = await nextDone(client, from);
  return { done, audioBytes: audioSince(client, from) };
}

async function nextDone(client: Client, from: number): Promise<ServerEventLike> {
  return eventually(
    () => client.events.slice(from).find((e) => e.type === 'response.done'),
    (e) => e !== undefined,
  ) as Promise<ServerEventLike>;
}

function audioSince(client: Client, from: number): number {
  return client.events
    .slice(from)
    .filter((e) => e.type === 'response.output_audio.delta')
    .reduce((n, e) => n + Buffer.from(e.audio as string, 'base64').length, 0);
}

/** Connections the simulator saw open (each starts with its session.update). */
function connections(env: RelayEnv): number[] {
  return [...new Set(env.simEvents.map((e) => e.connection))];
}

function itemTexts(env: RelayEnv, connection: number): string[] {
  return env.simEvents
    .filter((e) => e.connection === connection && e.event.type === 'conversation.item.create')
    .flatMap((e) => {
      const item = (e.event as { item: { type: string; content?: { text?: string }[]; output?: string } }).item;
      return item.content ? item.content.map((p) => p.text ?? '') : [item.output ?? ''];
    });
}

t.test('OpenAI-like cap announced ahead: the session moves twice at quiet moments, conversation and usage intact', async (t) => {
  // Each connection is warned 1 s after it opens and cut at 2.5 s.
  const env = await setupRelay(t, {}, { maxConnectionMs: 2500, capWarningMs: 1500 });
  const { client } = await agentSession(t, env);

  const first = await speak(client, 600);
  t.equal(first.done.response && (first.done.response as { status: string }).status, 'completed');
  t.equal(first.audioBytes, 600 * 48, 'the turn played back');
  // The silence after the turn's end is still in the input buffer: cleared, so the text is the next turn.
  client.send({ type: 'input_audio_buffer.clear' });
  const from = client.events.length;
  client.send({
    type: 'conversation.item.create',
    item: { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'remember 42' }] },
  });
  client.send({ type: 'response.create' });
  await nextDone(client, from);

  await eventually(
    () => connections(env).length,
    (n) => n >= 3,
    8000,
  );
  const second = await speak(client, 400);
  const usage = (second.done.response as { status: string; usage: Record<string, number> }).usage;
  t.equal((second.done.response as { status: string }).status, 'completed');
  t.equal(second.audioBytes, 400 * 48, 'audio after two moves: the turn played back whole');

  // The connection that heard the second turn was seeded with everything said before it, as text.
  const serving = env.simEvents.filter((e) => e.event.type === 'input_audio_buffer.append').at(-1)!.connection;
  t.ok(serving >= 3, `served by connection ${serving}`);
  const opening = env.simEvents.find((e) => e.connection === serving && e.event.type === 'session.update')!.event as {
    session: { instructions?: string };
  };
  t.equal(opening.session.instructions, INSTRUCTIONS, 'instructions replayed');
  const texts = itemTexts(env, serving);
  t.same(texts, ['speech 600 ms', 'speech 600 ms', 'remember 42', 'remember 42'], 'user turn, answers and the text item, in order');
  // The simulator bills the whole context: the replayed text is real input of the new connection.
  const replayed = textTokens(INSTRUCTIONS) + texts.reduce((n, s) => n + textTokens(s), 0);
  t.equal((usage.input_text_tokens ?? 0) + (usage.cached_input_tokens ?? 0), replayed + 0, 'input text tokens = the replayed context');
  t.notOk(
    client.events.some((e) => e.type === 'error'),
    'the client saw no error',
  );
  t.equal(client.closeCode, null, 'nor a close');

  // Metering across connections: audio in = what was appended, out = what the client got, tokens = the responses'.
  await client.close();
  const final = await eventually(
    () => env.checkpoints.find((c) => c.final),
    (c) => c !== undefined,
  );
  const dones = client.events.filter((e) => e.type === 'response.done').map((e) => (e.response as { usage: Record<string, number> }).usage);
  const sum = (k: string) => dones.reduce((n, u) => n + (u[k] ?? 0), 0);
  t.equal(final!.audio_in_ms, 600 + 600 + 400 + 600, 'every ms appended, once');
  t.equal(final!.audio_out_ms, Math.floor(audioSince(client, 0) / 48), 'every ms delivered, once');
  for (const k of [
    'input_audio_tokens',
    'input_text_tokens',
    'cached_input_tokens',
    'output_audio_tokens',
    'output_text_tokens',
  ] as const) {
    t.equal(final![k], sum(k), `${k}: the responses' reports, each once`);
  }
});

t.test('a lost upstream connection: the session moves at once, input sent meanwhile is answered', async (t) => {
  const env = await setupRelay(t);
  const { client } = await agentSession(t, env);
  await speak(client, 500);
  env.sim.terminateConnections();
  const second = await speak(client, 300);
  t.equal((second.done.response as { status: string }).status, 'completed');
  t.equal(second.audioBytes, 300 * 48, 'the turn spoken across the loss is answered whole');
  t.equal(connections(env).length, 2);
  t.same(itemTexts(env, 2), ['speech 500 ms', 'speech 500 ms']);
  t.notOk(client.events.some((e) => e.type === 'error'));
  t.equal(client.closeCode, null);
});

t.test('an upstream that cannot be re-established: upstream_unavailable, 1011, the session ends', async (t) => {
  const env = await setupRelay(t, { UPSTREAM_RECONNECT_ATTEMPTS: '2' });
  const { client, sessionId } = await agentSession(t, env);
  await speak(client, 300);
  env.sim.refuseConnections(true);
  env.sim.terminateConnections();
  const error = await client.next('error');
  t.equal((error.error as { code: string }).code, 'upstream_unavailable');
  const closed = await client.closed;
  t.equal(closed.code, 1011);
  await eventually(
    () => env.endRequests.find((m) => m.type === 'session.end_requested' && m.session_id === sessionId),
    (m) => m !== undefined,
  );
  const final = await eventually(
    () => env.checkpoints.find((c) => c.final),
    (c) => c !== undefined,
  );
  t.equal(final!.audio_in_ms, 900, 'what was sent before the loss is billed');
});

t.test('failover: the route cannot be re-established, the session continues on the next route, conversation replayed', async (t) => {
  // Route 2 is an Azure deployment: a second simulator answering as Azure's endpoint (path, api-key header).
  const azureEvents: ReceivedClientEvent[] = [];
  const azure = await startLocalProvider({
    port: 0,
    apiKey: 'azure-key-0123456789',
    apiKeyHeader: 'api-key',
    path: '/openai/v1/realtime',
    onClientEvent: (e) => azureEvents.push(e),
  });
  t.teardown(() => azure.close());
  const env = await setupRelay(t, {
    UPSTREAM_RECONNECT_ATTEMPTS: '2',
    AZURE_OPENAI_ENDPOINT: `http://127.0.0.1:${azure.port}`,
    AZURE_OPENAI_API_KEY: 'azure-key-0123456789',
  });
  const { client } = await agentSession(t, env, [{ provider: 'azure', provider_model: 'keeper-eu' }]);
  const first = await speak(client, 500);
  env.sim.refuseConnections(true);
  env.sim.terminateConnections();
  // Speak once the relay has seen the loss (its first attempt on the session's route): input sent before
  // it could reach the dying connection and count, rightly, on the first route (a race, not the contract).
  await eventually(
    async () => series(await env.metrics.scrape(), 's2s_relay_upstream_reconnects_total', { gen_ai_provider_name: 'local' }),
    (n) => n > 0,
  );
  const second = await speak(client, 300);
  t.equal((second.done.response as { status: string }).status, 'completed', 'answered on the next route');
  t.equal(second.audioBytes, 300 * 48, 'the turn spoken across the failover answered whole');
  const opening = azureEvents.find((e) => e.event.type === 'session.update')!.event as { session: { instructions?: string } };
  t.equal(opening.session.instructions, INSTRUCTIONS, 'the same settings on the next route');
  t.same(
    azureEvents
      .filter((e) => e.event.type === 'conversation.item.create')
      .flatMap((e) => (e.event as { item: { content: { text: string }[] } }).item.content.map((p) => p.text)),
    ['speech 500 ms', 'speech 500 ms'],
    'the conversation replayed on the next route',
  );
  t.equal(azureEvents[0]!.model, 'keeper-eu', "the route's own deployment");
  t.match(
    await env.metrics.scrape(),
    /s2s_relay_upstream_reconnects_total\{[^}]*gen_ai_provider_name="azure"[^}]*\} [1-9]/,
    'the reconnect metric names the route that took the session',
  );
  t.notOk(client.events.some((e) => e.type === 'error'));
  t.equal(client.closeCode, null);
  await client.close();
  const final = await eventually(
    () => env.checkpoints.find((c) => c.final),
    (c) => c !== undefined,
  );
  const dones = [first.done, second.done].map((e) => (e.response as { usage: Record<string, number> }).usage);
  t.equal(final!.audio_in_ms, 500 + 600 + 300 + 600, 'one bill across both routes: input once');
  for (const k of ['input_audio_tokens', 'input_text_tokens', 'output_audio_tokens'] as const) {
    t.equal(
      final![k],
      dones.reduce((n, u) => n + (u[k] ?? 0), 0),
      `${k}: each route's reports, each once`,
    );
  }
  // The usage names the route that served each part: each response's report under the route that answered it.
  const routes = checkpointRoutes(final!)!;
  t.same(
    routes.map((r) => [r.provider, r.provider_model]),
    [
      ['local', 'keeper-1'],
      ['azure', 'keeper-eu'],
    ],
    'both routes named, in the order they served',
  );
  for (const k of ['input_audio_tokens', 'input_text_tokens', 'output_audio_tokens'] as const) {
    t.same(
      routes.map((r) => r[k]),
      dones.map((u) => u[k] ?? 0),
      `${k}: the first answer on the first route, the second on the next`,
    );
  }
  for (const k of USAGE_COUNTERS) t.equal(routes[0]![k] + routes[1]![k], final![k], `${k}: the parts add up to the total`);
  t.ok(routes[1]!.audio_in_ms >= 300 && routes[1]!.audio_out_ms === second.audioBytes / 48, "the second turn on the next route's part");
  t.ok(
    series(await env.metrics.scrape(), 's2s_relay_frames_total', { network_io_direction: 'transmit', gen_ai_provider_name: 'azure' }) > 0,
    'frames after the failover are counted for the route serving them',
  );
});
