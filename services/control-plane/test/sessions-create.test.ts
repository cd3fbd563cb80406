import t, { type Test } from 'tap';
import { VoiceSession } from '@s2s/contract';
import { preauthorizationCents, SEED_RATE } from '@s2s/core';
import { checkLedgerInvariants } from '@s2s/db/testing';
import {
  CREATE_BODY,
  ECHO_PREAUTH_CENTS,
  REALTIME_BASE,
  adminHeaders,
  api,
  bearer,
  createKey,
  createSession,
  startControlPlane,
  walletRow,
  type Harness,
} from './helpers.js';

/** Waits until `n` statements are blocked on a row lock (polling through the test's own pool). */
async function waitForLockWaiters(h: Harness, n: number): Promise<void> {
  for (;;) {
    const { rows } = await h.testDb.db.pool.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`,
    );
    if (rows[0]!.n >= n) return;
    await new Promise((r) => setTimeout(r, 10));
  }
}

async function sessionCount(h: Harness): Promise<number> {
  return (await h.db.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM voice_sessions')).rows[0]!.n;
}

function expectError(
  t: Test,
  res: { status: number; body: any; headers: Headers },
  status: number,
  code: string,
  type: string,
  name?: string,
) {
  t.equal(res.status, status, name ?? code);
  t.equal(res.body?.error?.code, code, name ?? code);
  t.equal(res.body?.error?.type, type, name ?? code);
  t.equal(res.body?.error?.request_id, res.headers.get('x-request-id'), 'request_id is the X-Request-Id');
}

t.test('201: the full voice session, reserved in the same transaction', async (t) => {
  const h = await startControlPlane(t);
  const key = await createKey(h, 1000);
  const res = await createSession(h, key.key);
  t.equal(res.status, 201);
  const parsed = VoiceSession.safeParse(res.body);
  t.ok(parsed.success, 'strict contract shape');
  const s = res.body;
  t.match(s.id, /^vs_[0-9A-Za-z]{24}$/);
  t.equal(s.object, 'voice.session');
  t.equal(s.status, 'ready');
  t.equal(s.model, 'local/echo-1');
  t.equal(s.mode, 'speech_to_speech');
  t.same(s.realtime, { url: `${REALTIME_BASE}?session_id=${s.id}`, protocol: 'svc-realtime-v1' });
  t.same(s.audio.input, { type: 'audio/pcm', encoding: 'pcm16le', sample_rate_hz: 24000, channels: 1 });
  t.same(s.capabilities, {
    speech_to_speech: true,
    server_vad: true,
    barge_in: true,
    input_transcription: 'optional',
    output_transcription: 'optional',
  });
  t.same(s.billing, {
    preauthorized_cents: ECHO_PREAUTH_CENTS,
    balance_cents: 1000 - ECHO_PREAUTH_CENTS,
    reserved_cents: ECHO_PREAUTH_CENTS,
  });
  t.match(s.trace_id, /^[0-9a-f]{32}$/);

  const { rows } = await h.db.pool.query(
    `SELECT s.*, m.current_rate_id FROM voice_sessions s JOIN catalog_models m ON m.id = s.model_id WHERE s.id = $1`,
    [s.id],
  );
  const row = rows[0];
  t.same(s.usage, {
    model: 'local/echo-1',
    provider: 'local',
    pricing_source: 'upstream_derived',
    rate_snapshot_id: row.current_rate_id,
    audio_in_ms: 0,
    audio_out_ms: 0,
    input_audio_tokens: 0,
    input_text_tokens: 0,
    cached_input_tokens: 0,
    output_audio_tokens: 0,
    output_text_tokens: 0,
    transcribed_ms: 0,
    routes: [],
    billed_cents: 0,
  });
  t.equal(row.rate_snapshot_id, row.current_rate_id, 'the rate is snapshotted');
  t.equal(row.status, 'ready');
  t.equal(row.key_id, key.id);
  t.equal(row.wallet_id, key.wallet_id);
  t.equal(row.preauthorized_cents, ECHO_PREAUTH_CENTS);
  t.equal(row.reserved_cents, ECHO_PREAUTH_CENTS);
  t.equal(row.idle_timeout_seconds, 300);
  t.equal(row.trace_id, s.trace_id);
  t.equal(row.max_ends_at.getTime() - row.created_at.getTime(), 3600_000);
  t.equal(s.created_at, Math.floor(row.created_at.getTime() / 1000));
  t.equal(s.expires_at, Math.floor((row.created_at.getTime() + 300_000) / 1000), 'idle deadline');
  t.same(await walletRow(h, key.wallet_id), { balance: 1000, reserved: ECHO_PREAUTH_CENTS });
  t.same(await checkLedgerInvariants(h.db.pool), []);
  t.equal(res.headers.get('idempotent-replayed'), null);
});

t.test('the preauthorization follows config and the current rate snapshot', async (t) => {
  const h = await startControlPlane(t, {
    env: { SESSION_PREAUTH_MINUTES: '2', SESSION_IDLE_TIMEOUT_SECONDS: '30', SESSION_MAX_SECONDS: '120' },
  });
  const key = await createKey(h, 100_000);
  const first = await createSession(h, key.key);
  const seedRate = SEED_RATE;
  t.equal(first.body.billing.preauthorized_cents, preauthorizationCents(seedRate, 2));
  t.equal(first.body.expires_at - first.body.created_at, 30);

  // A price change between two creates: the next session snapshots the new rate (no stale in-process guess).
  // The text, cached and transcription rates are left out: PUT takes them as 0.
  const newRateInput = { per_minute: 6000, audio_in_token: 10, audio_out_token: 20, relay_fee_milli_cents: 500 };
  const newRate = { ...newRateInput, text_in_token: 0, text_out_token: 0, cached_in_token: 0, transcription_per_minute: 0 };
  const put = await api(h, 'PUT', '/admin/v1/models', {
    headers: adminHeaders,
    json: {
      id: 'local/echo-1',
      display_name: 'Local Echo',
      owned_by: 'local',
      provider: 'local',
      provider_model: 'echo-1',
      enabled: true,
      approved: true,
      pricing: newRateInput,
    },
  });
  t.equal(put.status, 200);
  t.has(put.body.pricing, newRate, 'the rates left out are 0');
  const second = await createSession(h, key.key);
  t.equal(second.status, 201);
  t.equal(second.body.usage.rate_snapshot_id, put.body.pricing.rate_snapshot_id);
  t.not(second.body.usage.rate_snapshot_id, first.body.usage.rate_snapshot_id);
  t.equal(second.body.billing.preauthorized_cents, preauthorizationCents(newRate, 2));
  const { rows } = await h.db.pool.query<{ id: string; rate_snapshot_id: string; preauthorized_cents: number }>(
    'SELECT id, rate_snapshot_id, preauthorized_cents FROM voice_sessions ORDER BY created_at',
  );
  t.same(
    rows.map((r) => [r.id, r.rate_snapshot_id, r.preauthorized_cents]),
    [
      [first.body.id, first.body.usage.rate_snapshot_id, preauthorizationCents(seedRate, 2)],
      [second.body.id, put.body.pricing.rate_snapshot_id, preauthorizationCents(newRate, 2)],
    ],
  );
  t.same(await checkLedgerInvariants(h.db.pool), []);
});

t.test('SESSION_CREATE_SYNC_COMMIT=true creates the same way with a synchronous commit', async (t) => {
  const h = await startControlPlane(t, { env: { SESSION_CREATE_SYNC_COMMIT: 'true' } });
  const key = await createKey(h, 1000);
  const res = await createSession(h, key.key);
  t.equal(res.status, 201);
  t.same(res.body.billing, {
    preauthorized_cents: ECHO_PREAUTH_CENTS,
    balance_cents: 1000 - ECHO_PREAUTH_CENTS,
    reserved_cents: ECHO_PREAUTH_CENTS,
  });
  const { rows } = await h.db.pool.query<{ setting: string }>(`SELECT current_setting('synchronous_commit') AS setting`);
  t.equal(rows[0]!.setting, 'on', 'the setting was local to the create transaction');
  t.same(await checkLedgerInvariants(h.db.pool), []);
});

t.test('security: no key, malformed, wrong, revoked; nothing reserved', async (t) => {
  const h = await startControlPlane(t);
  const key = await createKey(h, 1000);
  const cases: [string, Record<string, string>][] = [
    ['no Authorization', {}],
    ['not Bearer', { authorization: `Basic ${key.key}` }],
    ['malformed key', bearer('vr_sk_short')],
    ['not our prefix', bearer(`sk_${key.key.slice(6)}`)],
    ['wrong key', bearer(`vr_sk_${'A'.repeat(40)}`)],
    ['admin token', adminHeaders],
  ];
  for (const [name, headers] of cases) {
    const res = await api(h, 'POST', '/v1/voice/sessions', { headers, json: CREATE_BODY });
    expectError(t, res, 401, 'invalid_vr_sk', 'authentication_error', name);
    t.equal(res.headers.get('www-authenticate'), 'Bearer');
  }
  await api(h, 'POST', `/admin/v1/keys/${key.id}/revoke`, { headers: adminHeaders });
  expectError(t, await createSession(h, key.key), 401, 'invalid_vr_sk', 'authentication_error', 'revoked key');
  t.equal(await sessionCount(h), 0);
  t.same(await walletRow(h, key.wallet_id), { balance: 1000, reserved: 0 });
});

t.test('400 invalid_request for every malformed request, after a valid key', async (t) => {
  const h = await startControlPlane(t);
  const key = await createKey(h, 1000);
  const post = (headers: Record<string, string>, raw?: string) =>
    api(h, 'POST', '/v1/voice/sessions', { headers: { ...bearer(key.key), ...headers }, ...(raw === undefined ? {} : { raw }) });
  const json = { 'content-type': 'application/json' };
  const cases: [string, Promise<any>][] = [
    ['malformed JSON', post(json, '{"model": "local/echo-1",')],
    ['JSON scalar', post(json, '"local/echo-1"')],
    ['no body', post(json)],
    ['wrong content type', post({ 'content-type': 'text/plain' }, JSON.stringify(CREATE_BODY))],
    ['form content type', post({ 'content-type': 'application/x-www-form-urlencoded' }, 'model=local/echo-1&mode=speech_to_speech')],
    ['no content type', post({}, JSON.stringify(CREATE_BODY))],
    ['unknown field', post(json, JSON.stringify({ ...CREATE_BODY, usage_cents: 0 }))],
    ['wrong mode', post(json, JSON.stringify({ ...CREATE_BODY, mode: 'text' }))],
    ['missing mode', post(json, JSON.stringify({ model: 'local/echo-1' }))],
    ['missing model', post(json, JSON.stringify({ mode: 'speech_to_speech' }))],
    ['empty model', post(json, JSON.stringify({ model: '', mode: 'speech_to_speech' }))],
    ['array body', post(json, JSON.stringify([CREATE_BODY]))],
    ['oversized body', post(json, JSON.stringify({ ...CREATE_BODY, pad: 'x'.repeat(70_000) }))],
    ['empty Idempotency-Key', post({ ...json, 'idempotency-key': '' }, JSON.stringify(CREATE_BODY))],
    ['long Idempotency-Key', post({ ...json, 'idempotency-key': 'k'.repeat(256) }, JSON.stringify(CREATE_BODY))],
    ['control char in Idempotency-Key', post({ ...json, 'idempotency-key': 'a\tb' }, JSON.stringify(CREATE_BODY))],
  ];
  for (const [name, pending] of cases) {
    const res = await pending;
    expectError(t, res, 400, 'invalid_request', 'invalid_request_error', name);
    t.notMatch(res.text, /\bat [\w.<>]+ \(|node_modules|SyntaxError|PayloadTooLarge/, `${name}: no stack or internals`);
  }
  t.equal(await sessionCount(h), 0);
  t.same(await walletRow(h, key.wallet_id), { balance: 1000, reserved: 0 });
});

t.test('check order: auth, then body, then model, then wallet', async (t) => {
  const h = await startControlPlane(t);
  const poor = await createKey(h, 10);
  const wrong = bearer(`vr_sk_${'B'.repeat(40)}`);
  const raw = (headers: Record<string, string>, body: string) =>
    api(h, 'POST', '/v1/voice/sessions', { headers: { 'content-type': 'application/json', ...headers }, raw: body });

  expectError(t, await raw(wrong, '{not json'), 401, 'invalid_vr_sk', 'authentication_error', 'bad key + malformed JSON');
  expectError(t, await raw({}, '{not json'), 401, 'invalid_vr_sk', 'authentication_error', 'no key + malformed JSON');
  expectError(
    t,
    await raw(wrong, JSON.stringify({ model: 'nope/x', mode: 'speech_to_speech' })),
    401,
    'invalid_vr_sk',
    'authentication_error',
    'bad key + unknown model',
  );
  expectError(
    t,
    await raw(bearer(poor.key), JSON.stringify({ model: 'nope/x', mode: 'text' })),
    400,
    'invalid_request',
    'invalid_request_error',
    'bad body + unknown model',
  );
  expectError(
    t,
    await raw(bearer(poor.key), JSON.stringify({ model: 'nope/x', mode: 'speech_to_speech' })),
    404,
    'model_not_found',
    'not_found_error',
    'unknown model + poor wallet',
  );
  expectError(
    t,
    await raw(bearer(poor.key), JSON.stringify(CREATE_BODY)),
    402,
    'insufficient_wallet_balance',
    'billing_error',
    'poor wallet',
  );
});

t.test('404 model_not_found: missing, unapproved (never substituted)', async (t) => {
  const h = await startControlPlane(t);
  const key = await createKey(h, 1000);
  for (const model of ['local/unapproved-1', 'local/missing-9', 'openai/gpt-realtime', 'local/echo-1 ']) {
    expectError(
      t,
      await createSession(h, key.key, { body: { model, mode: 'speech_to_speech' } }),
      404,
      'model_not_found',
      'not_found_error',
      model,
    );
  }
  t.equal(await sessionCount(h), 0);
  t.same(await walletRow(h, key.wallet_id), { balance: 1000, reserved: 0 });
});

t.test('402 when the available amount cannot cover the preauthorization', async (t) => {
  const h = await startControlPlane(t);
  const exact = await createKey(h, ECHO_PREAUTH_CENTS);
  t.equal((await createSession(h, exact.key)).status, 201, 'exactly enough');
  expectError(t, await createSession(h, exact.key), 402, 'insufficient_wallet_balance', 'billing_error', 'nothing left');
  const short = await createKey(h, ECHO_PREAUTH_CENTS - 1);
  expectError(t, await createSession(h, short.key), 402, 'insufficient_wallet_balance', 'billing_error', 'one cent short');
  t.same(await walletRow(h, short.wallet_id), { balance: ECHO_PREAUTH_CENTS - 1, reserved: 0 });
  t.same(await walletRow(h, exact.wallet_id), { balance: ECHO_PREAUTH_CENTS, reserved: ECHO_PREAUTH_CENTS });
  t.same(await checkLedgerInvariants(h.db.pool), []);
});

t.test('50 concurrent creates against a wallet covering exactly 10', async (t) => {
  const h = await startControlPlane(t);
  const key = await createKey(h, ECHO_PREAUTH_CENTS * 10 + ECHO_PREAUTH_CENTS - 1);
  // With the wallet row held, the first sixteen all queue on its lock and re-check the funds one by one.
  const holder = await h.testDb.db.pool.connect();
  await holder.query('BEGIN');
  await holder.query('SELECT 1 FROM wallets WHERE id = $1 FOR UPDATE', [key.wallet_id]);
  const pending = Promise.all(Array.from({ length: 50 }, () => createSession(h, key.key)));
  await waitForLockWaiters(h, 16);
  await holder.query('COMMIT');
  holder.release();
  const results = await pending;
  const statuses = results.map((r) => r.status);
  t.equal(statuses.filter((s) => s === 201).length, 10, 'ten sessions');
  t.equal(statuses.filter((s) => s === 402).length, 40, 'forty refusals');
  t.equal(results.filter((r) => r.status === 402 && r.body.error.code === 'insufficient_wallet_balance').length, 40);
  t.equal(await sessionCount(h), 10);
  const wallet = await walletRow(h, key.wallet_id);
  t.same(wallet, { balance: ECHO_PREAUTH_CENTS * 11 - 1, reserved: ECHO_PREAUTH_CENTS * 10 });
  t.ok(wallet.balance - wallet.reserved >= 0, 'available never negative');
  const balances = results
    .filter((r) => r.status === 201)
    .map((r) => r.body.billing.balance_cents)
    .sort((a, b) => b - a);
  t.same(
    balances,
    Array.from({ length: 10 }, (_, i) => ECHO_PREAUTH_CENTS * (10 - i) - 1),
    'each answer shows the available amount after its own reservation',
  );
  t.same(await checkLedgerInvariants(h.db.pool), []);
});

t.test('Idempotency-Key: replay, conflict, scope and 24 h retention', async (t) => {
  const h = await startControlPlane(t);
  const key = await createKey(h, ECHO_PREAUTH_CENTS * 2);
  const first = await createSession(h, key.key, { idempotencyKey: 'order-1' });
  t.equal(first.status, 201);
  t.equal(first.headers.get('idempotent-replayed'), null);

  const replay = await createSession(h, key.key, { idempotencyKey: 'order-1', body: { mode: 'speech_to_speech', model: 'local/echo-1' } });
  t.equal(replay.status, 201, 'same body in another key order is the same request');
  t.equal(replay.headers.get('idempotent-replayed'), 'true');
  t.same(replay.body, first.body, 'the same session');
  t.not(replay.headers.get('x-request-id'), first.headers.get('x-request-id'), 'a fresh request id');

  const conflict = await createSession(h, key.key, {
    idempotencyKey: 'order-1',
    body: { model: 'local/unapproved-1', mode: 'speech_to_speech' },
  });
  expectError(t, conflict, 409, 'idempotency_conflict', 'conflict_error');

  const other = await createKey(h, ECHO_PREAUTH_CENTS);
  const scoped = await createSession(h, other.key, { idempotencyKey: 'order-1' });
  t.equal(scoped.status, 201, 'keys are scoped to the owner key');
  t.not(scoped.body.id, first.body.id);

  // Drain the wallet: a replay still answers with its session, not 402.
  t.equal((await createSession(h, key.key)).status, 201);
  t.equal((await createSession(h, key.key)).status, 402);
  const late = await createSession(h, key.key, { idempotencyKey: 'order-1' });
  t.same([late.status, late.body.id, late.headers.get('idempotent-replayed')], [201, first.body.id, 'true']);

  // A record older than 24 hours counts as absent.
  await api(h, 'POST', `/admin/v1/wallets/${key.wallet_id}/credit`, { headers: adminHeaders, json: { amount_cents: ECHO_PREAUTH_CENTS } });
  await h.db.pool.query(`UPDATE idempotency_keys SET created_at = now() - interval '25 hours' WHERE key_id = $1`, [key.id]);
  const renewed = await createSession(h, key.key, { idempotencyKey: 'order-1' });
  t.equal(renewed.status, 201);
  t.not(renewed.body.id, first.body.id, 'a new session');
  t.equal(renewed.headers.get('idempotent-replayed'), null);
  const { rows } = await h.db.pool.query('SELECT session_id FROM idempotency_keys WHERE key_id = $1', [key.id]);
  t.same(rows, [{ session_id: renewed.body.id }]);
  t.same(await checkLedgerInvariants(h.db.pool), []);
});

t.test('20 concurrent creates with one Idempotency-Key make one session', async (t) => {
  const h = await startControlPlane(t);
  const key = await createKey(h, 100_000);
  const warm = await createSession(h, key.key);
  // Hold the wallet row so that every request reads "no record yet" and then queues on the row lock:
  // each later one reaches the Idempotency-Key insert after the first committed.
  const holder = await h.testDb.db.pool.connect();
  await holder.query('BEGIN');
  await holder.query('SELECT 1 FROM wallets WHERE id = $1 FOR UPDATE', [key.wallet_id]);
  const pending = Promise.all(Array.from({ length: 20 }, () => createSession(h, key.key, { idempotencyKey: 'same-request' })));
  await waitForLockWaiters(h, 16);
  await holder.query('COMMIT');
  holder.release();
  const results = await pending;
  t.same(
    results.map((r) => r.status),
    Array(20).fill(201),
    'all answered 201',
  );
  const ids = new Set(results.map((r) => r.body.id));
  t.equal(ids.size, 1, 'one session id for all');
  t.equal(results.filter((r) => r.headers.get('idempotent-replayed') === null).length, 1, 'one original, the rest replays');
  t.not(results[0]!.body.id, warm.body.id);
  t.equal(await sessionCount(h), 2);
  t.same(await walletRow(h, key.wallet_id), { balance: 100_000, reserved: 2 * ECHO_PREAUTH_CENTS }, 'one reservation for the twenty');
  t.same(await checkLedgerInvariants(h.db.pool), []);

  const mixed = await Promise.all(
    Array.from({ length: 10 }, (_, i) =>
      createSession(h, key.key, {
        idempotencyKey: 'mixed',
        body: i % 2 ? CREATE_BODY : { model: 'local/missing-1', mode: 'speech_to_speech' },
      }),
    ),
  );
  const codes = new Set(mixed.map((r) => r.status));
  t.ok(
    [...codes].every((c) => [201, 404, 409].includes(c)),
    `only 201, 404 or 409: ${[...codes]}`,
  );
  t.ok(
    mixed.filter((r) => r.status === 201).every((r) => r.body.id === mixed.find((m) => m.status === 201)?.body.id),
    'at most one session',
  );
  t.ok((await sessionCount(h)) <= 3);
});
