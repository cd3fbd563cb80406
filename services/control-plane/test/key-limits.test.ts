// Issue 8, item 5: per-key limits on live sessions and on the create rate (decisions.md, "Limits"),
// settable and visible in the operator API, enforced across control-plane replicas.
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import t, { type Test } from 'tap';
import { ErrorResponse } from '@s2s/contract';
import { createDb } from '@s2s/db';
import { checkLedgerInvariants } from '@s2s/db/testing';
import { createLogger } from '@s2s/telemetry';
import { buildApp } from '../src/app.js';
import { createHttpServer } from '../src/server.js';
import {
  CREATE_BODY,
  ECHO_PREAUTH_CENTS,
  adminHeaders,
  api,
  bearer,
  createSession,
  startBilling,
  startControlPlane,
  walletRow,
  type Harness,
} from './helpers.js';

const LIMIT_ENV = { KEY_MAX_LIVE_SESSIONS: '7', KEY_MAX_CREATES_PER_MINUTE: '70' };

/** A second control plane on the same database and bus prefix: another replica. */
async function startReplica(t: Test, h: Harness): Promise<{ url: string }> {
  const db = createDb(h.testDb.url, { max: 4 });
  const logger = createLogger({ service: 'control-plane', level: 'silent' });
  const server = createHttpServer(buildApp({ config: h.config, db, bus: h.bus, logger }), logger).listen(0, '127.0.0.1');
  await once(server, 'listening');
  t.teardown(async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
    await db.close();
  });
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

async function newKey(h: { url: string }, body: Record<string, unknown>) {
  const res = await api(h, 'POST', '/admin/v1/keys', { headers: adminHeaders, json: { balance_cents: 100_000, ...body } });
  if (res.status !== 201) throw new Error(`key creation failed: ${res.status} ${res.text}`);
  return res.body as { id: string; key: string; wallet_id: string; max_live_sessions: number; max_creates_per_minute: number };
}

function expectLimited(t: Test, res: { status: number; body: any; headers: Headers }, limit: string, name: string) {
  t.equal(res.status, 429, name);
  t.ok(ErrorResponse.safeParse(res.body).success, `${name}: ErrorResponse`);
  t.same([res.body?.error?.code, res.body?.error?.type], ['rate_limit_exceeded', 'rate_limit_error'], name);
  t.match(res.body?.error?.message, new RegExp(limit), `${name}: the message names ${limit}`);
  t.equal(res.body?.error?.request_id, res.headers.get('x-request-id'));
  const retryAfter = res.headers.get('retry-after');
  t.match(retryAfter, /^[1-9][0-9]*$/, `${name}: Retry-After in whole seconds`);
  return Number(retryAfter);
}

async function sessionCount(h: Harness, keyId: string): Promise<number> {
  const { rows } = await h.db.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM voice_sessions WHERE key_id = $1', [keyId]);
  return rows[0]!.n;
}

t.test('limits are settable in POST /admin/v1/keys and PATCH /admin/v1/keys/{id}, visible in the answers', async (t) => {
  const h = await startControlPlane(t, { env: LIMIT_ENV });
  const plain = await newKey(h, {});
  t.same([plain.max_live_sessions, plain.max_creates_per_minute], [7, 70], 'a key without its own limits shows the defaults');
  const own = await newKey(h, { max_live_sessions: 3, max_creates_per_minute: 12, label: 'loop' });
  t.same([own.max_live_sessions, own.max_creates_per_minute], [3, 12]);

  const got = await api(h, 'GET', `/admin/v1/keys/${own.id}`, { headers: adminHeaders });
  t.equal(got.status, 200);
  t.same(got.body, {
    id: own.id,
    wallet_id: own.wallet_id,
    label: 'loop',
    prefix: own.key.slice(0, 10),
    created_at: got.body.created_at,
    revoked: false,
    max_live_sessions: 3,
    max_creates_per_minute: 12,
    live_sessions: 0,
  });
  t.notOk(got.text.includes(own.key), 'the secret is never shown again');

  const patched = await api(h, 'PATCH', `/admin/v1/keys/${own.id}`, { headers: adminHeaders, json: { max_live_sessions: 5 } });
  t.equal(patched.status, 200);
  t.same([patched.body.max_live_sessions, patched.body.max_creates_per_minute], [5, 12], 'only what the body names changes');
  const reset = await api(h, 'PATCH', `/admin/v1/keys/${own.id}`, { headers: adminHeaders, json: { max_creates_per_minute: null } });
  t.same([reset.status, reset.body.max_live_sessions, reset.body.max_creates_per_minute], [200, 5, 70], 'null returns to the default');

  for (const [name, body] of [
    ['zero live sessions', { max_live_sessions: 0 }],
    ['negative rate', { max_creates_per_minute: -1 }],
    ['fractional', { max_live_sessions: 1.5 }],
    ['too large', { max_live_sessions: 2 ** 31 }],
    ['string', { max_creates_per_minute: '10' }],
    ['unknown field', { max_sessions: 3 }],
    ['balance is not patchable', { balance_cents: 5 }],
    ['empty', {}],
  ] as const) {
    const res = await api(h, 'PATCH', `/admin/v1/keys/${own.id}`, { headers: adminHeaders, json: body });
    t.same([res.status, res.body?.error?.code], [400, 'invalid_request'], `PATCH: ${name}`);
    const created = await api(h, 'POST', '/admin/v1/keys', { headers: adminHeaders, json: { balance_cents: 1, ...body } });
    if (name !== 'empty' && name !== 'balance is not patchable') {
      t.same([created.status, created.body?.error?.code], [400, 'invalid_request'], `POST: ${name}`);
    }
  }
  const missing = await api(h, 'PATCH', '/admin/v1/keys/key_nope', { headers: adminHeaders, json: { max_live_sessions: 2 } });
  t.same([missing.status, missing.body?.error?.code], [404, 'key_not_found']);
  const missingGet = await api(h, 'GET', '/admin/v1/keys/key_nope', { headers: adminHeaders });
  t.same([missingGet.status, missingGet.body?.error?.code], [404, 'key_not_found']);
  for (const [method, json] of [
    ['PATCH', { max_live_sessions: 2 }],
    ['GET', undefined],
  ] as const) {
    const res = await api(h, method, `/admin/v1/keys/${own.id}`, { headers: bearer(own.key), ...(json ? { json } : {}) });
    t.same([res.status, res.body?.error?.code], [401, 'invalid_admin_token'], `${method} needs the admin token`);
  }
  const after = await api(h, 'GET', `/admin/v1/keys/${own.id}`, { headers: adminHeaders });
  t.same([after.body.max_live_sessions, after.body.max_creates_per_minute], [5, 70], 'refusals changed nothing');
});

t.test('max_live_sessions: over the limit, 429 rate_limit_exceeded with Retry-After, nothing reserved', async (t) => {
  const h = await startControlPlane(t, { env: LIMIT_ENV });
  await startBilling(t, h, { END_GRACE_MS: '200' });
  const key = await newKey(h, { max_live_sessions: 2 });
  const a = await createSession(h, key.key, { idempotencyKey: 'first' });
  const b = await createSession(h, key.key);
  t.same([a.status, b.status], [201, 201]);
  const refused = await createSession(h, key.key);
  expectLimited(t, refused, 'max_live_sessions', 'third live session');
  t.equal(await sessionCount(h, key.id), 2, 'no session was made');
  t.same(await walletRow(h, key.wallet_id), { balance: 100_000, reserved: 2 * ECHO_PREAUTH_CENTS }, 'nothing was reserved');

  const replay = await createSession(h, key.key, { idempotencyKey: 'first' });
  t.same(
    [replay.status, replay.body.id, replay.headers.get('idempotent-replayed')],
    [201, a.body.id, 'true'],
    'a replay is not a new session',
  );

  const shown = await api(h, 'GET', `/admin/v1/keys/${key.id}`, { headers: adminHeaders });
  t.equal(shown.body.live_sessions, 2, 'the operator sees the live count');

  // 409 session_termination_failed means "settling, ask again" (the billing process may still be starting).
  let ended = await api(h, 'POST', `/v1/voice/sessions/${a.body.id}/end`, { headers: bearer(key.key) });
  for (let i = 0; i < 10 && ended.status === 409; i++) {
    ended = await api(h, 'POST', `/v1/voice/sessions/${a.body.id}/end`, { headers: bearer(key.key) });
  }
  t.same([ended.status, ended.body.status], [200, 'cancelled']);
  const again = await createSession(h, key.key);
  t.equal(again.status, 201, 'a terminal session frees its place');
  expectLimited(t, await createSession(h, key.key), 'max_live_sessions', 'at the limit again');

  const raised = await api(h, 'PATCH', `/admin/v1/keys/${key.id}`, { headers: adminHeaders, json: { max_live_sessions: 3 } });
  t.equal(raised.status, 200);
  t.equal((await createSession(h, key.key)).status, 201, 'a raised limit applies to the next create');
  t.equal((await api(h, 'GET', `/admin/v1/keys/${key.id}`, { headers: adminHeaders })).body.live_sessions, 3);
  t.same(await checkLedgerInvariants(h.db.pool), []);
});

t.test('max_creates_per_minute: a burst of the limit, then 429 until Retry-After has passed', async (t) => {
  const h = await startControlPlane(t, { env: LIMIT_ENV });
  const key = await newKey(h, { max_creates_per_minute: 10, max_live_sessions: 100 });
  const burst = await Promise.all(Array.from({ length: 14 }, () => createSession(h, key.key)));
  const statuses = burst.map((r) => r.status).sort();
  t.same(statuses, [...Array(10).fill(201), ...Array(4).fill(429)], '10 of 14 concurrent creates pass');
  let retryAfter = 0;
  for (const res of burst.filter((r) => r.status === 429)) retryAfter = expectLimited(t, res, 'max_creates_per_minute', 'over the rate');
  t.ok(retryAfter >= 1 && retryAfter <= 6, `Retry-After ${retryAfter} s is one emission interval (6 s) at most`);
  t.equal(await sessionCount(h, key.id), 10);
  t.same(await walletRow(h, key.wallet_id), { balance: 100_000, reserved: 10 * ECHO_PREAUTH_CENTS }, 'refusals reserved nothing');

  await new Promise((resolve) => setTimeout(resolve, retryAfter * 1000 + 100));
  t.equal((await createSession(h, key.key)).status, 201, 'after Retry-After one more create passes');
  expectLimited(t, await createSession(h, key.key), 'max_creates_per_minute', 'and the next one waits again');
  t.same(await checkLedgerInvariants(h.db.pool), []);
});

t.test('the defaults apply to keys without their own limits', async (t) => {
  const h = await startControlPlane(t, { env: { KEY_MAX_LIVE_SESSIONS: '2', KEY_MAX_CREATES_PER_MINUTE: '1000' } });
  const key = await newKey(h, {});
  t.same([(await createSession(h, key.key)).status, (await createSession(h, key.key)).status], [201, 201]);
  expectLimited(t, await createSession(h, key.key), 'max_live_sessions', 'the default live limit');
  const other = await newKey(h, { max_live_sessions: 3 });
  for (let i = 0; i < 3; i++) t.equal((await createSession(h, other.key)).status, 201, 'its own limit, not the default');
});

t.test('limits hold across control-plane replicas', async (t) => {
  const h = await startControlPlane(t, { env: LIMIT_ENV });
  const replicas = [h, await startReplica(t, h), await startReplica(t, h)];
  const live = await newKey(h, { max_live_sessions: 4, max_creates_per_minute: 1000 });
  const results = await Promise.all(Array.from({ length: 12 }, (_, i) => createSession(replicas[i % 3]!, live.key)));
  t.equal(results.filter((r) => r.status === 201).length, 4, 'four live sessions in all, whichever replica answered');
  t.equal(results.filter((r) => r.status === 429).length, 8);
  t.equal(await sessionCount(h, live.id), 4);

  const rate = await newKey(h, { max_creates_per_minute: 6 });
  const burst = await Promise.all(Array.from({ length: 12 }, (_, i) => createSession(replicas[i % 3]!, rate.key)));
  t.equal(burst.filter((r) => r.status === 201).length, 6, 'six creates in all across three replicas');
  t.same(await walletRow(h, rate.wallet_id), { balance: 100_000, reserved: 6 * ECHO_PREAUTH_CENTS });
  t.same(await checkLedgerInvariants(h.db.pool), []);
});

t.test('the create body and other refusals keep their order around the limits', async (t) => {
  const h = await startControlPlane(t, { env: LIMIT_ENV });
  const key = await newKey(h, { max_live_sessions: 1 });
  t.equal((await createSession(h, key.key)).status, 201);
  const badKey = await createSession(h, `vr_sk_${'Q'.repeat(40)}`);
  t.equal(badKey.status, 401, 'an unknown key is 401, not 429');
  const badBody = await api(h, 'POST', '/v1/voice/sessions', { headers: bearer(key.key), json: { model: 'local/echo-1' } });
  t.equal(badBody.status, 400, 'a bad body is 400');
  expectLimited(
    t,
    await createSession(h, key.key, { body: { ...CREATE_BODY, model: 'acme/none' } }),
    'max_live_sessions',
    'limits before the model',
  );
});
