import t from 'tap';
import { ModelList, AdminModel } from '@s2s/contract';
import { SEED_RATE } from '@s2s/core';
import { createDb } from '@s2s/db';
import { seedCatalog } from '../src/domain/catalog.js';
import { createContext } from '../src/context.js';
import { adminHeaders, api, createKey, createSession, startControlPlane, type Harness } from './helpers.js';

// The seeded rate: every field, the text, cached and transcription rates included (decisions.md).
const ECHO_PRICING = SEED_RATE;

async function snapshots(h: Harness, modelId: string) {
  const { rows } = await h.db.pool.query<{ id: string; per_minute: number; current: boolean }>(
    `SELECT r.id, r.per_minute, (m.current_rate_id = r.id) AS current
       FROM rate_snapshots r JOIN catalog_models m ON m.id = r.model_id WHERE r.model_id = $1 ORDER BY r.created_at, r.id`,
    [modelId],
  );
  return rows;
}

function upsert(h: Harness, body: unknown, headers: Record<string, string> = adminHeaders) {
  return api(h, 'PUT', '/admin/v1/models', { headers, json: body });
}

const acme = (over: Record<string, unknown> = {}) => ({
  id: 'acme/voice-1',
  display_name: 'Acme Voice',
  owned_by: 'acme',
  provider: 'local',
  provider_model: 'voice-1',
  enabled: true,
  approved: true,
  pricing: { per_minute: 600, audio_in_token: 5, audio_out_token: 7, relay_fee_milli_cents: 100 },
  ...over,
});

t.test('GET /v1/models lists only the approved, enabled, priced speech-to-speech model of the seed', async (t) => {
  const h = await startControlPlane(t);
  const res = await api(h, 'GET', '/v1/models');
  t.equal(res.status, 200);
  t.ok(ModelList.safeParse(res.body).success, 'strict contract shape (no extra fields)');
  t.equal(res.body.object, 'list');
  t.same(
    res.body.data.map((m: { id: string }) => m.id),
    ['local/echo-1'],
    'local/unapproved-1 is omitted',
  );
  const [echo] = res.body.data;
  const { rows } = await h.db.pool.query<{ created_at: Date; current_rate_id: string }>(
    `SELECT created_at, current_rate_id FROM catalog_models WHERE id = 'local/echo-1'`,
  );
  t.equal(echo.created, Math.floor(rows[0]!.created_at.getTime() / 1000));
  t.same(echo.pricing, {
    source: 'upstream_derived',
    currency: 'cent',
    unit: 'milli_cents',
    ...ECHO_PRICING,
    rate_snapshot_id: rows[0]!.current_rate_id,
  });
  t.equal(echo.display_name, 'Local Echo');
  t.equal(echo.name, 'Local Echo');
  t.equal(echo.owned_by, 'local');
  t.same(echo.modalities, { input: ['audio'], output: ['audio'] });
  t.equal(echo.pricing_unit, 'milli_cents');
  t.equal(echo.price_audio_out_token_milli_cents, 20);
  for (const hidden of ['provider', 'provider_model', 'enabled', 'approved']) t.notOk(hidden in echo, `${hidden} not exposed`);
  t.notMatch(res.text, /"echo-1"/, 'the provider model name never appears on its own');
  t.match(res.headers.get('x-request-id'), /^req_[0-9a-f]{32}$/);
});

t.test('seeding is idempotent and never overrides the operator', async (t) => {
  const h = await startControlPlane(t);
  const ctx = createContext({
    config: h.config,
    db: h.db,
    bus: h.bus,
    logger: (await import('@s2s/telemetry')).createLogger({ service: 't', level: 'silent' }),
  });
  const before = await snapshots(h, 'local/echo-1');
  t.equal(before.length, 1);
  t.same(await seedCatalog({ ctx }), { inserted: [] });
  t.same(await snapshots(h, 'local/echo-1'), before, 'no new snapshot when nothing changed');
  t.equal((await snapshots(h, 'local/unapproved-1')).length, 1, 'the unapproved model is registered and priced');

  const changed = await upsert(h, {
    id: 'local/echo-1',
    display_name: 'Echo (operator)',
    owned_by: 'local',
    provider: 'local',
    provider_model: 'echo-1',
    enabled: true,
    approved: false,
    pricing: { ...ECHO_PRICING, per_minute: 2000 },
  });
  t.equal(changed.status, 200);
  await seedCatalog({ ctx });
  const { rows } = await h.db.pool.query(`SELECT display_name, approved FROM catalog_models WHERE id = 'local/echo-1'`);
  t.same(rows[0], { display_name: 'Echo (operator)', approved: false }, 'a restart keeps the operator choice');
  t.same(
    (await snapshots(h, 'local/echo-1')).map((s) => [s.per_minute, s.current]),
    [
      [1000, false],
      [2000, true],
    ],
  );
});

t.test('PUT /admin/v1/models: create with defaults, then snapshot only on pricing changes', async (t) => {
  const h = await startControlPlane(t);
  const created = await upsert(h, acme());
  t.equal(created.status, 200);
  t.ok(AdminModel.safeParse(created.body).success, 'admin model shape');
  t.equal(created.body.provider, 'local');
  t.equal(created.body.provider_model, 'voice-1');
  t.equal(created.body.approved, true);
  t.same(created.body.capabilities, {
    speech_to_speech: true,
    server_vad: true,
    barge_in: true,
    input_transcription: 'optional',
    output_transcription: 'optional',
    // What the provider (the simulator) does with the current OpenAI session fields.
    session_fields: { reasoning: false, prompt: false, parallel_tool_calls: false, truncation: 'disabled', include: 'none' },
  });
  t.same(created.body.modalities, { input: ['audio'], output: ['audio'] });
  t.equal(created.body.audio.output.sample_rate_hz, 24000);
  const firstRate = created.body.pricing.rate_snapshot_id;
  t.match(firstRate, /^rate_[0-9A-Za-z]{24}$/);

  const renamed = await upsert(h, acme({ display_name: 'Acme Voice v2' }));
  t.equal(renamed.status, 200);
  t.equal(renamed.body.pricing.rate_snapshot_id, firstRate, 'unchanged pricing keeps the snapshot');
  t.equal(renamed.body.display_name, 'Acme Voice v2');

  const repriced = await upsert(
    h,
    acme({ pricing: { per_minute: 900, audio_in_token: 5, audio_out_token: 7, relay_fee_milli_cents: 100 } }),
  );
  t.not(repriced.body.pricing.rate_snapshot_id, firstRate, 'a pricing change makes a new snapshot');
  t.equal(repriced.body.pricing.per_minute, 900);
  t.same(
    (await snapshots(h, 'acme/voice-1')).map((s) => [s.id, s.per_minute, s.current]),
    [
      [firstRate, 600, false],
      [repriced.body.pricing.rate_snapshot_id, 900, true],
    ],
  );
  await t.rejects(
    h.db.pool.query(`UPDATE rate_snapshots SET per_minute = 1 WHERE id = $1`, [firstRate]),
    /immutable/,
    'old snapshot stays as it was',
  );

  const list = await api(h, 'GET', '/v1/models');
  t.same(
    list.body.data.map((m: { id: string }) => m.id),
    ['acme/voice-1', 'local/echo-1'],
  );
  t.equal(list.body.data[0].pricing.rate_snapshot_id, repriced.body.pricing.rate_snapshot_id);
});

t.test('PUT /admin/v1/models: text, cached and transcription rates default to 0, are stored, shown and snapshotted', async (t) => {
  const h = await startControlPlane(t);
  const audio = { per_minute: 600, audio_in_token: 5, audio_out_token: 7, relay_fee_milli_cents: 100 };
  const zero = { text_in_token: 0, text_out_token: 0, cached_in_token: 0, transcription_per_minute: 0 };
  const created = await upsert(h, acme({ pricing: audio }));
  t.equal(created.status, 200);
  t.has(created.body.pricing, { ...audio, ...zero }, 'left out: 0, and shown');
  const modality = { text_in_token: 3, text_out_token: 12, cached_in_token: 1, transcription_per_minute: 450 };
  const repriced = await upsert(h, acme({ pricing: { ...audio, ...modality } }));
  t.equal(repriced.status, 200);
  t.has(repriced.body.pricing, { ...audio, ...modality });
  t.not(repriced.body.pricing.rate_snapshot_id, created.body.pricing.rate_snapshot_id, 'a text rate change is a pricing change');
  const again = await upsert(h, acme({ pricing: { ...audio, ...modality } }));
  t.equal(again.body.pricing.rate_snapshot_id, repriced.body.pricing.rate_snapshot_id, 'unchanged: same snapshot');
  const { rows } = await h.db.pool.query(
    `SELECT text_in_token, text_out_token, cached_in_token, transcription_per_minute FROM rate_snapshots WHERE id = $1`,
    [repriced.body.pricing.rate_snapshot_id],
  );
  t.same(rows, [modality], 'stored in the snapshot');
  const listed = (await api(h, 'GET', '/v1/models')).body.data.find((m: { id: string }) => m.id === 'acme/voice-1');
  t.has(listed.pricing, modality, 'the public catalog shows them');
  for (const [field, value] of [
    ['text_in_token', -1],
    ['cached_in_token', 1.5],
    ['transcription_per_minute', '10'],
  ] as const) {
    const bad = await upsert(h, acme({ pricing: { ...audio, [field]: value } }));
    t.equal(bad.status, 400, `${field} = ${JSON.stringify(value)} is refused`);
  }
});

t.test('listing follows enabled, approved and speech-to-speech; create follows the listing', async (t) => {
  const h = await startControlPlane(t);
  const key = await createKey(h, 10_000);
  const ids = async () => (await api(h, 'GET', '/v1/models')).body.data.map((m: { id: string }) => m.id);

  await upsert(h, acme({ approved: false }));
  t.same(await ids(), ['local/echo-1'], 'not approved: omitted');
  t.equal(
    (await createSession(h, key.key, { body: { model: 'acme/voice-1', mode: 'speech_to_speech' } })).body.error.code,
    'model_not_found',
  );

  await upsert(h, acme());
  t.same(await ids(), ['acme/voice-1', 'local/echo-1'], 'approved: listed');
  t.equal((await createSession(h, key.key, { body: { model: 'acme/voice-1', mode: 'speech_to_speech' } })).status, 201);

  await upsert(h, acme({ enabled: false }));
  t.same(await ids(), ['local/echo-1'], 'disabled: omitted');
  t.equal((await createSession(h, key.key, { body: { model: 'acme/voice-1', mode: 'speech_to_speech' } })).status, 404);

  await upsert(
    h,
    acme({
      capabilities: {
        speech_to_speech: false,
        server_vad: true,
        barge_in: true,
        input_transcription: 'optional',
        output_transcription: 'optional',
      },
    }),
  );
  t.same(await ids(), ['local/echo-1'], 'not speech-to-speech: omitted');
  t.equal((await createSession(h, key.key, { body: { model: 'acme/voice-1', mode: 'speech_to_speech' } })).status, 404);
});

t.test('PUT /admin/v1/models: fallback routes are stored in order, shown to the operator only, replaced and cleared', async (t) => {
  const h = await startControlPlane(t);
  const routes = [
    { provider: 'azure', provider_model: 'voice-1-eu' },
    { provider: 'openai', provider_model: 'gpt-realtime' },
  ];
  const created = await upsert(h, acme({ fallback_routes: routes }));
  t.equal(created.status, 200);
  t.ok(AdminModel.safeParse(created.body).success);
  t.same(created.body.fallback_routes, routes, 'in order');
  const listed = await api(h, 'GET', '/admin/v1/models', { headers: adminHeaders });
  t.same(listed.body.data.find((m: { id: string }) => m.id === 'acme/voice-1').fallback_routes, routes);
  const pub = (await api(h, 'GET', '/v1/models')).body.data.find((m: { id: string }) => m.id === 'acme/voice-1');
  t.notOk('fallback_routes' in pub, 'never in the public catalog');
  const swapped = await upsert(h, acme({ fallback_routes: [routes[1]] }));
  t.same(swapped.body.fallback_routes, [routes[1]], 'a PUT replaces the list');
  const cleared = await upsert(h, acme());
  t.same(cleared.body.fallback_routes, [], 'left out: no fallback');
});

t.test('PUT /admin/v1/models refusals', async (t) => {
  const h = await startControlPlane(t);
  const cases: [string, unknown, number, string][] = [
    ['unknown provider without capabilities', acme({ provider: 'acme' }), 400, 'invalid_request'],
    ['unknown field', acme({ secret_sauce: 1 }), 400, 'invalid_request'],
    ['id not <namespace>/<name>', acme({ id: 'no-namespace' }), 400, 'invalid_request'],
    [
      'negative price',
      acme({ pricing: { per_minute: -1, audio_in_token: 0, audio_out_token: 0, relay_fee_milli_cents: 0 } }),
      400,
      'invalid_request',
    ],
    [
      'fractional price',
      acme({ pricing: { per_minute: 1.5, audio_in_token: 0, audio_out_token: 0, relay_fee_milli_cents: 0 } }),
      400,
      'invalid_request',
    ],
    [
      'a fallback route equal to the primary',
      acme({ fallback_routes: [{ provider: 'local', provider_model: 'voice-1' }] }),
      400,
      'invalid_request',
    ],
    [
      'the same fallback route twice',
      acme({
        fallback_routes: [
          { provider: 'azure', provider_model: 'voice-1' },
          { provider: 'azure', provider_model: 'voice-1' },
        ],
      }),
      400,
      'invalid_request',
    ],
    [
      'more than 4 fallback routes',
      acme({ fallback_routes: [1, 2, 3, 4, 5].map((n) => ({ provider: 'azure', provider_model: `d${n}` })) }),
      400,
      'invalid_request',
    ],
    ['a fallback route without its model', acme({ fallback_routes: [{ provider: 'azure' }] }), 400, 'invalid_request'],
    [
      'wrong audio format',
      acme({
        audio: {
          input: { type: 'audio/pcm', encoding: 'pcm16le', sample_rate_hz: 16000, channels: 1 },
          output: { type: 'audio/pcm', encoding: 'pcm16le', sample_rate_hz: 24000, channels: 1 },
        },
      }),
      400,
      'invalid_request',
    ],
  ];
  for (const [name, body, status, code] of cases) {
    const res = await upsert(h, body);
    t.equal(res.status, status, name);
    t.equal(res.body.error.code, code, name);
  }
  const noToken = await upsert(h, acme(), {});
  t.equal(noToken.status, 401);
  t.equal(noToken.body.error.code, 'invalid_admin_token');
  t.equal((await api(h, 'GET', '/v1/models')).body.data.length, 1, 'nothing was written');
});

t.test('GET /v1/models answers 503 service_unavailable when the store is down', async (t) => {
  const down = createDb('postgres://postgres@127.0.0.1:1/s2s_down', { connectionTimeoutMs: 1000 });
  const h = await startControlPlane(t, { db: down });
  const res = await api(h, 'GET', '/v1/models');
  t.equal(res.status, 503);
  t.same(Object.keys(res.body.error).sort(), ['code', 'message', 'request_id', 'type']);
  t.equal(res.body.error.code, 'service_unavailable');
  t.equal(res.body.error.type, 'service_unavailable_error');
  t.equal(res.body.error.request_id, res.headers.get('x-request-id'));
  t.notMatch(res.text, /ECONNREFUSED|127\.0\.0\.1|postgres/, 'no infrastructure detail leaks');
  const ready = await api(h, 'GET', '/readyz');
  t.equal(ready.status, 503);
  t.equal(ready.body.error.code, 'service_unavailable');
  t.equal((await api(h, 'GET', '/healthz')).status, 200, 'the process itself is up');
});
