import { randomBytes } from 'node:crypto';
import t from 'tap';
import { createTestDatabase, createWalletAndKey } from '@s2s/db/testing';
import { preauthorizationCents } from '@s2s/core';
import { httpStatus } from '@s2s/http-errors';
import { createSession } from '../src/index.js';
import { TEST_POLICY, TEST_RATE } from '../src/testing.js';

/** The rate the fixtures' rows below hold. */
const RATE = { ...TEST_RATE, per_minute: 1000 };

async function fixtures(t: Parameters<typeof createTestDatabase>[0]) {
  const { db } = await createTestDatabase(t);
  const { keyId, walletId } = await createWalletAndKey(db.pool, { balanceCents: 1000 });
  for (const [id, approved] of [
    ['local/a', true],
    ['local/hidden', false],
  ] as const) {
    await db.pool.query(
      `INSERT INTO catalog_models (id, display_name, owned_by, provider, provider_model, enabled, approved, capabilities, audio, modalities)
       VALUES ($1, $1, 'test', 'local', 'm', true, $2, '{"speech_to_speech":true}', '{}', '{}')`,
      [id, approved],
    );
    await db.pool.query(
      `INSERT INTO rate_snapshots (id, model_id, source, per_minute, audio_in_token, audio_out_token, relay_fee_milli_cents)
       VALUES ($1, $2, 'upstream_derived', 1000, 10, 20, 500)`,
      [`rate_${id.slice(6)}`, id],
    );
    await db.pool.query('UPDATE catalog_models SET current_rate_id = $1 WHERE id = $2', [`rate_${id.slice(6)}`, id]);
  }
  return { db, key: { keyId, walletId } };
}

const traceId = () => randomBytes(16).toString('hex');

t.test('createSession reserves the preauthorization and refuses like POST /v1/voice/sessions', async (t) => {
  const { db, key } = await fixtures(t);
  const preauth = preauthorizationCents(RATE, TEST_POLICY.preauthMinutes);
  const { session, replayed } = await createSession({
    ctx: { db },
    input: { key, request: { model: 'local/a', mode: 'speech_to_speech' }, traceId: traceId(), policy: TEST_POLICY },
  });
  t.equal(replayed, false);
  t.equal(session.status, 'ready');
  t.equal(session.preauthorizedCents, preauth);
  t.equal(session.reservedCents, preauth);
  t.equal(session.legacy, false);
  t.equal(session.maxEndsAt.getTime() - session.createdAt.getTime(), 3600_000);
  const { rows } = await db.pool.query<{ reserved: number }>('SELECT reserved_cents::int AS reserved FROM wallets WHERE id = $1', [
    key.walletId,
  ]);
  t.equal(rows[0]?.reserved, preauth);

  await t.rejects(
    createSession({
      ctx: { db },
      input: { policy: TEST_POLICY, key, request: { model: 'local/hidden', mode: 'speech_to_speech' }, traceId: traceId() },
    }),
    { name: 'AppError', code: 'model_not_found' },
  );
  t.equal(httpStatus('model_not_found'), 404);
  // 1000 cents hold floor(1000 / preauth) preauthorizations and not one more.
  const many = Math.floor(1000 / preauth);
  for (let i = 1; i < many; i++) {
    await createSession({
      ctx: { db },
      input: { policy: TEST_POLICY, key, request: { model: 'local/a', mode: 'speech_to_speech' }, traceId: traceId() },
    });
  }
  await t.rejects(
    createSession({
      ctx: { db },
      input: { policy: TEST_POLICY, key, request: { model: 'local/a', mode: 'speech_to_speech' }, legacy: true, traceId: traceId() },
    }),
    { name: 'AppError', code: 'insufficient_wallet_balance' },
  );
  t.equal(httpStatus('insufficient_wallet_balance'), 402);
  const count = await db.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM voice_sessions');
  t.equal(count.rows[0]?.n, many, 'refusals created nothing');
});

t.test('createSession with an Idempotency-Key: replays, conflicts, concurrent duplicates make one session', async (t) => {
  const { db, key } = await fixtures(t);
  const create = (idempotencyKey: string, model = 'local/a') =>
    createSession({
      ctx: { db },
      input: { policy: TEST_POLICY, key, request: { model, mode: 'speech_to_speech' }, idempotencyKey, traceId: traceId() },
    });
  const first = await create('k1');
  const again = await create('k1');
  t.equal(again.replayed, true);
  t.equal(again.session.id, first.session.id);
  await t.rejects(create('k1', 'local/hidden'), { name: 'AppError', code: 'idempotency_conflict' });
  t.equal(httpStatus('idempotency_conflict'), 409);

  const racing = await Promise.all([create('k2'), create('k2'), create('k2')]);
  t.equal(new Set(racing.map((r) => r.session.id)).size, 1, 'one session for concurrent duplicates');
  t.equal(racing.filter((r) => !r.replayed).length, 1);

  // A record past its retention is taken over by a new session.
  await db.pool.query(`UPDATE idempotency_keys SET created_at = now() - interval '25 hours' WHERE idempotency_key = 'k1'`);
  const fresh = await create('k1');
  t.equal(fresh.replayed, false);
  t.not(fresh.session.id, first.session.id);
});
