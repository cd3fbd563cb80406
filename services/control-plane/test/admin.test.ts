import t from 'tap';
import { createHash } from 'node:crypto';
import { CreateKeyResponse, Wallet } from '@s2s/contract';
import { checkLedgerInvariants } from '@s2s/db/testing';
import { ADMIN_TOKEN, adminHeaders, api, bearer, createKey, createSession, startControlPlane, walletRow, type Harness } from './helpers.js';

async function ledger(h: Harness, walletId: string) {
  const { rows } = await h.db.pool.query<{ kind: string; amount: number }>(
    'SELECT kind, amount_cents::float8 AS amount FROM ledger_entries WHERE wallet_id = $1 ORDER BY id',
    [walletId],
  );
  return rows.map((r) => [r.kind, r.amount]);
}

t.test('POST /admin/v1/keys makes a funded wallet and a key shown once, stored hashed', async (t) => {
  const h = await startControlPlane(t);
  const res = await api(h, 'POST', '/admin/v1/keys', { headers: adminHeaders, json: { balance_cents: 2500, label: 'demo' } });
  t.equal(res.status, 201);
  t.ok(CreateKeyResponse.safeParse(res.body).success, 'exact shape');
  t.match(res.body.id, /^key_[0-9A-Za-z]{24}$/);
  t.match(res.body.wallet_id, /^wal_[0-9A-Za-z]{24}$/);
  t.match(res.body.key, /^vr_sk_[0-9A-Za-z]{40}$/);
  t.equal(res.body.balance_cents, 2500);
  t.equal(res.headers.get('cache-control'), 'no-store');

  const { rows } = await h.db.pool.query('SELECT * FROM api_keys WHERE id = $1', [res.body.id]);
  t.equal(rows[0].secret_hash, createHash('sha256').update(res.body.key).digest('hex'));
  t.equal(rows[0].prefix, res.body.key.slice(0, 10));
  t.equal(rows[0].label, 'demo');
  t.notOk(JSON.stringify(rows[0]).includes(res.body.key), 'the secret itself is stored nowhere');
  t.same(await ledger(h, res.body.wallet_id), [['credit', 2500]]);
  t.same(await walletRow(h, res.body.wallet_id), { balance: 2500, reserved: 0 });
  t.notOk(h.logLines.join('').includes(res.body.key), 'nor logged');

  const empty = await createKey(h, 0);
  t.same(await ledger(h, empty.wallet_id), [], 'no credit row for a zero balance');
  t.same(await checkLedgerInvariants(h.db.pool), []);
});

t.test('POST /admin/v1/keys refusals', async (t) => {
  const h = await startControlPlane(t);
  for (const [name, body] of [
    ['negative', { balance_cents: -1 }],
    ['fractional', { balance_cents: 1.5 }],
    ['string', { balance_cents: '100' }],
    ['missing', {}],
    ['unknown field', { balance_cents: 1, owner: 'x' }],
    ['array', [1]],
  ] as const) {
    const res = await api(h, 'POST', '/admin/v1/keys', { headers: adminHeaders, json: body });
    t.equal(res.status, 400, name);
    t.equal(res.body.error.code, 'invalid_request', name);
    t.equal(res.body.error.type, 'invalid_request_error', name);
  }
  const wrongType = await api(h, 'POST', '/admin/v1/keys', {
    headers: { ...adminHeaders, 'content-type': 'text/plain' },
    raw: '{"balance_cents":1}',
  });
  t.equal(wrongType.status, 400);
  t.equal((await h.db.pool.query('SELECT count(*)::int AS n FROM wallets')).rows[0].n, 0, 'nothing was created');
});

t.test('the operator API needs the admin token on every route', async (t) => {
  const h = await startControlPlane(t);
  const key = await createKey(h, 1000);
  const routes: [string, string, unknown][] = [
    ['POST', '/admin/v1/keys', { balance_cents: 1 }],
    ['POST', `/admin/v1/keys/${key.id}/revoke`, undefined],
    ['POST', `/admin/v1/wallets/${key.wallet_id}/credit`, { amount_cents: 1 }],
    ['GET', `/admin/v1/wallets/${key.wallet_id}`, undefined],
    ['PUT', '/admin/v1/models', {}],
  ];
  const badHeaders: [string, Record<string, string>][] = [
    ['missing', {}],
    ['wrong token', { authorization: 'Bearer not-the-admin-token' }],
    ['token prefix only', { authorization: `Bearer ${ADMIN_TOKEN.slice(0, -1)}` }],
    ['wrong scheme', { authorization: `Basic ${ADMIN_TOKEN}` }],
    ['an API key', bearer(key.key)],
  ];
  for (const [method, path, json] of routes) {
    for (const [name, headers] of badHeaders) {
      const res = await api(h, method, path, { headers, ...(json === undefined ? {} : { json }) });
      t.equal(res.status, 401, `${method} ${path}: ${name}`);
      t.equal(res.body.error.code, 'invalid_admin_token');
      t.equal(res.body.error.type, 'authentication_error');
    }
  }
  t.same(await walletRow(h, key.wallet_id), { balance: 1000, reserved: 0 }, 'nothing changed');
  t.equal((await createSession(h, key.key)).status, 201, 'the key was not revoked');
});

t.test('revocation takes effect on the very next request', async (t) => {
  const h = await startControlPlane(t);
  const key = await createKey(h, 10_000);
  t.equal((await createSession(h, key.key)).status, 201);
  const res = await api(h, 'POST', `/admin/v1/keys/${key.id}/revoke`, { headers: adminHeaders });
  t.equal(res.status, 200);
  t.same(res.body, { id: key.id, revoked: true });
  const next = await createSession(h, key.key);
  t.equal(next.status, 401);
  t.equal(next.body.error.code, 'invalid_vr_sk');
  const again = await api(h, 'POST', `/admin/v1/keys/${key.id}/revoke`, { headers: adminHeaders });
  t.same([again.status, again.body], [200, { id: key.id, revoked: true }], 'repeatable');
  const missing = await api(h, 'POST', '/admin/v1/keys/key_doesnotexist/revoke', { headers: adminHeaders });
  t.equal(missing.status, 404);
  t.equal(missing.body.error.code, 'key_not_found');
  t.equal(missing.body.error.type, 'not_found_error');
});

t.test('credit and read a wallet', async (t) => {
  const h = await startControlPlane(t);
  const key = await createKey(h, 1000);
  t.equal((await createSession(h, key.key)).status, 201);

  const credited = await api(h, 'POST', `/admin/v1/wallets/${key.wallet_id}/credit`, {
    headers: adminHeaders,
    json: { amount_cents: 250 },
  });
  t.equal(credited.status, 200);
  t.ok(Wallet.safeParse(credited.body).success);
  t.same(credited.body, { id: key.wallet_id, balance_cents: 1250, reserved_cents: 161, available_cents: 1089 });
  t.same(await ledger(h, key.wallet_id), [
    ['credit', 1000],
    ['credit', 250],
  ]);

  const read = await api(h, 'GET', `/admin/v1/wallets/${key.wallet_id}`, { headers: adminHeaders });
  t.same([read.status, read.body], [200, { id: key.wallet_id, balance_cents: 1250, reserved_cents: 161, available_cents: 1089 }]);

  for (const amount of [0, -5, 2.5, '10']) {
    const bad = await api(h, 'POST', `/admin/v1/wallets/${key.wallet_id}/credit`, {
      headers: adminHeaders,
      json: { amount_cents: amount },
    });
    t.equal(bad.status, 400, `amount ${JSON.stringify(amount)}`);
    t.equal(bad.body.error.code, 'invalid_request');
  }
  const unknownField = await api(h, 'POST', `/admin/v1/wallets/${key.wallet_id}/credit`, {
    headers: adminHeaders,
    json: { amount_cents: 5, note: 'x' },
  });
  t.equal(unknownField.status, 400);

  const missingCredit = await api(h, 'POST', '/admin/v1/wallets/wal_nope/credit', { headers: adminHeaders, json: { amount_cents: 5 } });
  t.same([missingCredit.status, missingCredit.body.error.code], [404, 'wallet_not_found']);
  const missingRead = await api(h, 'GET', '/admin/v1/wallets/wal_nope', { headers: adminHeaders });
  t.same([missingRead.status, missingRead.body.error.code, missingRead.body.error.type], [404, 'wallet_not_found', 'not_found_error']);

  t.same(await walletRow(h, key.wallet_id), { balance: 1250, reserved: 161 });
  t.same(await checkLedgerInvariants(h.db.pool), []);
});

t.test('concurrent credits all land', async (t) => {
  const h = await startControlPlane(t);
  const key = await createKey(h, 0);
  const results = await Promise.all(
    Array.from({ length: 20 }, () =>
      api(h, 'POST', `/admin/v1/wallets/${key.wallet_id}/credit`, { headers: adminHeaders, json: { amount_cents: 7 } }),
    ),
  );
  t.same(
    results.map((r) => r.status),
    Array(20).fill(200),
  );
  t.same(await walletRow(h, key.wallet_id), { balance: 140, reserved: 0 });
  t.equal((await ledger(h, key.wallet_id)).length, 20);
  t.same(await checkLedgerInvariants(h.db.pool), []);
});
