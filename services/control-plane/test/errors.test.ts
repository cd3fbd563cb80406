import t from 'tap';
import { ErrorResponse } from '@s2s/contract';
import { ADMIN_TOKEN, adminHeaders, api, bearer, createKey, createSession, startControlPlane } from './helpers.js';

t.test('every answer carries a fresh X-Request-Id; error bodies repeat it', async (t) => {
  const h = await startControlPlane(t);
  const seen = new Set<string>();
  const answers = [
    await api(h, 'GET', '/v1/models'),
    await api(h, 'GET', '/healthz'),
    await api(h, 'GET', '/v1/voice/sessions/vs_x'),
    await api(h, 'POST', '/v1/voice/sessions', { json: {} }),
    await api(h, 'GET', '/nowhere'),
    await api(h, 'GET', '/v1/models', { headers: { 'x-request-id': 'client-chosen' } }),
  ];
  for (const res of answers) {
    const id = res.headers.get('x-request-id');
    t.match(id, /^req_[0-9a-f]{32}$/);
    t.notOk(seen.has(id!), 'unique');
    seen.add(id!);
    if (res.status >= 400) {
      t.ok(ErrorResponse.safeParse(res.body).success, 'ErrorResponse with exactly the four members');
      t.equal(res.body.error.request_id, id);
    }
  }
  t.equal(answers[5]!.headers.get('x-powered-by'), null, 'no framework banner');
});

t.test('unknown routes and methods: 404 ErrorResponse', async (t) => {
  const h = await startControlPlane(t);
  const key = await createKey(h, 1000);
  for (const [method, path] of [
    ['GET', '/'],
    ['GET', '/v2/models'],
    ['DELETE', '/v1/models'],
    ['POST', '/v1/models'],
    ['PUT', '/v1/voice/sessions'],
    ['GET', '/v1/voice/sessions'],
    ['PATCH', '/v1/voice/sessions/vs_1'],
    ['GET', '/v1/voice/sessions/'],
  ] as const) {
    const res = await api(h, method, path, { headers: bearer(key.key) });
    t.equal(res.status, 404, `${method} ${path}`);
    t.same([res.body.error.code, res.body.error.type], ['not_found', 'not_found_error'], `${method} ${path}`);
  }
  const unknownAdmin = await api(h, 'GET', '/admin/v1/nothing', { headers: adminHeaders });
  t.same([unknownAdmin.status, unknownAdmin.body.error.code], [404, 'not_found']);
  const unknownAdminNoToken = await api(h, 'GET', '/admin/v1/nothing');
  t.equal(unknownAdminNoToken.status, 401, 'the operator API reveals nothing without the token');
  const badEncoding = await api(h, 'GET', '/v1/voice/sessions/%E0%A4%A', { headers: bearer(key.key) });
  t.same([badEncoding.status, badEncoding.body.error.code], [400, 'invalid_request'], 'undecodable path');
});

t.test('unexpected failures answer 500 internal_error with a generic message; the detail goes to the log', async (t) => {
  const h = await startControlPlane(t);
  await h.db.pool.query('ALTER TABLE rate_snapshots RENAME TO rate_snapshots_gone');
  const res = await api(h, 'GET', '/v1/models');
  t.equal(res.status, 500);
  t.same([res.body.error.code, res.body.error.type], ['internal_error', 'internal_error']);
  t.match(res.body.error.message, /^An internal error occurred/);
  t.notMatch(res.text, /rate_snapshots|relation|postgres|\bat \S+ \(/, 'no SQL, driver or stack detail');
  const line = h.logLines.map((l) => JSON.parse(l)).find((l) => l.msg === 'request failed');
  t.equal(line?.request_id, res.body.error.request_id, 'the log line carries the request id');
  t.match(line?.err?.message, /rate_snapshots/, 'and the detail');
});

t.test('logs: one line per request with its request id, and no secret anywhere', async (t) => {
  const h = await startControlPlane(t);
  const key = await createKey(h, 1000);
  const created = await createSession(h, key.key, { idempotencyKey: 'log-test' });
  await api(h, 'GET', `/v1/voice/sessions/${created.body.id}`, { headers: bearer(key.key) });
  await api(h, 'GET', `/v1/voice/sessions/${created.body.id}`, { headers: bearer(`vr_sk_${'D'.repeat(40)}`) });
  await api(h, 'POST', '/v1/voice/sessions', { headers: bearer(key.key), raw: `{"model":"${key.key}"` });
  await api(h, 'GET', '/v1/models?api_key=vr_sk_leakleakleakleakleakleakleakleakleak');
  const all = h.logLines.join('');
  t.notOk(all.includes(key.key), 'the API key never reaches the log');
  t.notOk(all.includes(ADMIN_TOKEN), 'nor the admin token');
  t.notOk(all.includes('leakleak'), 'nor a key in a query string');
  t.notOk(/authorization/i.test(all), 'no Authorization header');
  const lines = h.logLines.map((l) => JSON.parse(l));
  const requests = lines.filter((l) => l.msg === 'request completed');
  t.equal(requests.length, 6);
  t.ok(
    requests.every((l) => /^req_[0-9a-f]{32}$/.test(l.request_id)),
    'request id on every request line',
  );
  t.same(
    requests.map((l) => [l.method, l.status]),
    [
      ['POST', 201],
      ['POST', 201],
      ['GET', 200],
      ['GET', 401],
      ['POST', 400],
      ['GET', 200],
    ],
  );
  t.equal(requests[3].code, 'invalid_vr_sk');
  t.equal(requests[5].path, '/v1/models', 'paths without their query string');
});
