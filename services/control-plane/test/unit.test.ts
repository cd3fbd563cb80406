import t from 'tap';
import { createHash } from 'node:crypto';
import { Model, type UpsertModelRequest } from '@s2s/contract';
import { AppError, preauthorizationCents, SEED_RATE } from '@s2s/core';
import { httpStatus } from '@s2s/http-errors';
import { DEV_ADMIN_TOKEN, loadConfig } from '../src/config.js';
import { SEED_MODELS, toModel, withModelDefaults, type CatalogRow } from '../src/domain/catalog.js';
import { canonicalJson, requestFingerprint } from '@s2s/core';
import { parseIdempotencyKey } from '../src/http/idempotency.js';
import { describeIssues } from '../src/http/body.js';
import { ECHO_PREAUTH_CENTS } from './helpers.js';

t.test('canonical JSON sorts keys at every depth and keeps array order', async (t) => {
  t.equal(canonicalJson({ b: 1, a: { d: [3, { z: 1, y: 2 }], c: null } }), '{"a":{"c":null,"d":[3,{"y":2,"z":1}]},"b":1}');
  t.equal(canonicalJson({ a: undefined, b: 'x' }), '{"b":"x"}');
  t.equal(canonicalJson([undefined, 'é', 1.5, true]), '[null,"é",1.5,true]');
  t.equal(canonicalJson('a"b'), '"a\\"b"');
});

t.test('the fingerprint is the SHA-256 of the canonical JSON, independent of key order', async (t) => {
  const a = requestFingerprint({ model: 'local/echo-1', mode: 'speech_to_speech' });
  const b = requestFingerprint({ mode: 'speech_to_speech', model: 'local/echo-1' });
  t.equal(a, b);
  t.equal(a, createHash('sha256').update('{"mode":"speech_to_speech","model":"local/echo-1"}').digest('hex'));
  t.not(a, requestFingerprint({ model: 'local/echo-2', mode: 'speech_to_speech' }));
  t.match(a, /^[0-9a-f]{64}$/);
});

t.test('Idempotency-Key: absent, or 1-255 printable ASCII characters', async (t) => {
  t.equal(parseIdempotencyKey(undefined), undefined);
  t.equal(parseIdempotencyKey('order-42 retry #1'), 'order-42 retry #1');
  t.equal(parseIdempotencyKey('~'.repeat(255)), '~'.repeat(255));
  for (const bad of ['', 'x'.repeat(256), 'tab\there', 'naïve', 'line\nbreak', '\x7f']) {
    t.throws(() => parseIdempotencyKey(bad), { code: 'invalid_request' }, JSON.stringify(bad));
  }
  t.equal(httpStatus('invalid_request'), 400);
});

t.test('validation messages name the fields, not the values', async (t) => {
  const msg = describeIssues([
    { code: 'unrecognized_keys', keys: ['usage_cents'], path: [], message: 'Unrecognized key: "usage_cents"', input: {} },
    { code: 'invalid_type', expected: 'string', path: ['model'], message: 'Invalid input: expected string', input: 7 },
  ] as never);
  t.equal(msg, 'Invalid request body (body: Unrecognized key: "usage_cents"; model: Invalid input: expected string).');
});

t.test('config: defaults of docs/architecture.md', async (t) => {
  const c = loadConfig({});
  t.equal(c.HTTP_PORT, 8080);
  t.equal(c.HOST, '127.0.0.1');
  t.equal(c.REALTIME_PUBLIC_URL, 'ws://127.0.0.1:8081/v1/realtime');
  t.equal(c.ADMIN_TOKEN, DEV_ADMIN_TOKEN);
  t.equal(c.adminTokenIsDevDefault, true);
  t.equal(c.SESSION_IDLE_TIMEOUT_SECONDS, 300);
  t.equal(c.SESSION_MAX_SECONDS, 3600);
  t.equal(c.SESSION_PREAUTH_MINUTES, 10);
  t.equal(c.END_WAIT_MS, 8000);
  t.equal(c.SEED_CATALOG, true);
  t.equal(c.DB_POOL_SIZE, 8);
  t.equal(c.HTTP_BODY_LIMIT_BYTES, 65_536);
  t.equal(c.SESSION_CREATE_SYNC_COMMIT, false);
  t.equal(c.DATABASE_URL, 'postgres://postgres@127.0.0.1:5432/s2s_gateway');
  t.equal(c.BUS_PREFIX, 's2s');
});

t.test('config: values, booleans and refusals', async (t) => {
  const c = loadConfig({ HTTP_PORT: '9000', SEED_CATALOG: 'false', ADMIN_TOKEN: 'x'.repeat(24), SESSION_PREAUTH_MINUTES: '3' });
  t.equal(c.HTTP_PORT, 9000);
  t.equal(c.SEED_CATALOG, false, '"false" is false');
  t.equal(c.ADMIN_TOKEN, 'x'.repeat(24));
  t.equal(c.adminTokenIsDevDefault, false);
  t.equal(c.SESSION_PREAUTH_MINUTES, 3);
  t.equal(loadConfig({ ADMIN_TOKEN: '  ' }).adminTokenIsDevDefault, true, 'blank is unset');
  t.throws(() => loadConfig({ NODE_ENV: 'production' }), /ADMIN_TOKEN: is required when NODE_ENV is production/);
  t.throws(() => loadConfig({ NODE_ENV: 'production', ADMIN_TOKEN: DEV_ADMIN_TOKEN }), /ADMIN_TOKEN: must not be the development default/);
  t.equal(loadConfig({ NODE_ENV: 'production', ADMIN_TOKEN: 'a-real-secret-token' }).ADMIN_TOKEN, 'a-real-secret-token');
  t.throws(() => loadConfig({ REALTIME_PUBLIC_URL: 'http://example.com/v1/realtime' }), /REALTIME_PUBLIC_URL/);
  t.throws(() => loadConfig({ HTTP_PORT: '70000' }), /HTTP_PORT/);
  t.throws(() => loadConfig({ SEED_CATALOG: 'maybe' }), /SEED_CATALOG/);
  t.throws(() => loadConfig({ SESSION_IDLE_TIMEOUT_SECONDS: '0' }), /SESSION_IDLE_TIMEOUT_SECONDS/);
});

t.test('model defaults come from the provider; an unknown provider must state capabilities', async (t) => {
  const base: UpsertModelRequest = {
    id: 'acme/x-1',
    display_name: 'X',
    owned_by: 'acme',
    provider: 'local',
    provider_model: 'x',
    enabled: true,
    approved: true,
    pricing: {
      per_minute: 1,
      audio_in_token: 2,
      audio_out_token: 3,
      text_in_token: 0,
      text_out_token: 0,
      cached_in_token: 0,
      transcription_per_minute: 0,
      relay_fee_milli_cents: 4,
    },
  };
  const m = withModelDefaults(base);
  t.same(m.capabilities, {
    speech_to_speech: true,
    server_vad: true,
    barge_in: true,
    input_transcription: 'optional',
    output_transcription: 'optional',
  });
  t.same(m.modalities, { input: ['audio'], output: ['audio'] });
  t.same(m.audio.input, { type: 'audio/pcm', encoding: 'pcm16le', sample_rate_hz: 24000, channels: 1 });
  const err = t.throws(() => withModelDefaults({ ...base, provider: 'acme' })) as AppError;
  t.equal(err.code, 'invalid_request');
  const own = { ...m.capabilities, barge_in: false };
  t.same(withModelDefaults({ ...base, provider: 'acme', capabilities: own }).capabilities, own);
});

t.test('a catalog row maps to the public model with legacy aliases and no routing fields', async (t) => {
  const seed = withModelDefaults(SEED_MODELS[0]!);
  const row: CatalogRow = {
    id: seed.id,
    display_name: seed.display_name,
    owned_by: seed.owned_by,
    provider: 'local',
    provider_model: 'echo-1',
    enabled: true,
    approved: true,
    capabilities: seed.capabilities,
    audio: seed.audio,
    modalities: seed.modalities,
    fallback_routes: [{ provider: 'azure', provider_model: 'echo-deployment' }],
    created_at: new Date('2026-01-02T03:04:05.678Z'),
    rate_id: 'rate_abc',
    source: 'upstream_derived',
    ...seed.pricing,
  };
  const model = toModel(row);
  t.ok(Model.safeParse(model).success, 'strict contract shape');
  t.equal(model.created, Math.floor(Date.parse('2026-01-02T03:04:05.678Z') / 1000));
  t.equal(model.name, 'Local Echo');
  t.same(model.pricing, {
    source: 'upstream_derived',
    currency: 'cent',
    unit: 'milli_cents',
    ...SEED_RATE,
    rate_snapshot_id: 'rate_abc',
  });
  t.equal(model.price_per_minute_milli_cents, 1000);
  t.equal(model.price_relay_fee_milli_cents, 500);
  for (const hidden of ['provider', 'provider_model', 'fallback_routes', 'enabled', 'approved']) t.notOk(hidden in model, hidden);
});

t.test('the seed preauthorization the integration tests rely on', async (t) => {
  t.equal(preauthorizationCents(SEED_MODELS[0]!.pricing, 10), ECHO_PREAUTH_CENTS);
});
