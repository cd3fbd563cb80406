// Issue 8, defect 4: an id that can never exist (a NUL byte, over 255 characters) is simply not found.
import t from 'tap';
import { ErrorResponse } from '@s2s/contract';
import { adminHeaders, api, bearer, createKey, startControlPlane } from './helpers.js';

const IMPOSSIBLE_IDS: [string, string][] = [
  ['a NUL byte', '%00'],
  ['a NUL byte inside an id', 'vs_abc%00def'],
  ['256 characters', 'vs_' + 'a'.repeat(253)],
  ['10,000 characters', 'x'.repeat(10_000)],
];

t.test('impossible ids answer 404 with the resource not-found code, never 500', async (t) => {
  const h = await startControlPlane(t);
  const key = await createKey(h, 1000);
  const routes: [string, (id: string) => string, Record<string, string>, string][] = [
    ['GET', (id) => `/v1/voice/sessions/${id}`, bearer(key.key), 'session_not_found'],
    ['POST', (id) => `/v1/voice/sessions/${id}/end`, bearer(key.key), 'session_not_found'],
    ['POST', (id) => `/admin/v1/keys/${id}/revoke`, adminHeaders, 'key_not_found'],
    ['GET', (id) => `/admin/v1/wallets/${id}`, adminHeaders, 'wallet_not_found'],
  ];
  for (const [method, path, headers, code] of routes) {
    for (const [name, id] of IMPOSSIBLE_IDS) {
      const res = await api(h, method, path(id), { headers });
      const what = `${method} ${path('{id}')} with ${name}`;
      t.equal(res.status, 404, what);
      t.equal(res.body?.error?.code, code, what);
      t.ok(ErrorResponse.safeParse(res.body).success, `${what}: ErrorResponse`);
      t.equal(res.body?.error?.request_id, res.headers.get('x-request-id'), `${what}: request id`);
    }
  }
  const credit = await api(h, 'POST', '/admin/v1/wallets/%00/credit', { headers: adminHeaders, json: { amount_cents: 5 } });
  t.same([credit.status, credit.body?.error?.code], [404, 'wallet_not_found'], 'credit on a NUL wallet id');
  t.notOk(
    h.logLines.some((l) => l.includes('"request failed"')),
    'nothing was logged as a failure',
  );
});

t.test('an impossible session id still checks the key first (401 before 404)', async (t) => {
  const h = await startControlPlane(t);
  const res = await api(h, 'GET', '/v1/voice/sessions/%00', { headers: bearer(`vr_sk_${'Z'.repeat(40)}`) });
  t.same([res.status, res.body?.error?.code], [401, 'invalid_vr_sk']);
  const end = await api(h, 'POST', '/v1/voice/sessions/%00/end');
  t.same([end.status, end.body?.error?.code], [401, 'invalid_vr_sk']);
  const admin = await api(h, 'GET', '/admin/v1/wallets/%00');
  t.same([admin.status, admin.body?.error?.code], [401, 'invalid_admin_token']);
});
