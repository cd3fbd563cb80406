// CORS on the public API for CORS_ALLOWED_ORIGINS (decisions.md, "Ephemeral client secrets (browsers)").
import t from 'tap';
import { loadConfig } from '../src/config.js';
import { adminHeaders, api, bearer, createKey, startControlPlane } from './helpers.js';

const APP = 'https://app.example.com';
const EVIL = 'https://evil.example.net';

function preflight(h: { url: string }, path: string, origin: string, method = 'POST') {
  return api(h, 'OPTIONS', path, {
    headers: { origin, 'access-control-request-method': method, 'access-control-request-headers': 'authorization,content-type' },
  });
}

t.test('an allowed origin: preflight answered, actual requests carry the CORS headers', async (t) => {
  const h = await startControlPlane(t, { env: { CORS_ALLOWED_ORIGINS: `${APP}, http://localhost:5173` } });
  const pre = await preflight(h, '/v1/realtime/client_secrets', APP);
  t.equal(pre.status, 204);
  t.equal(pre.headers.get('access-control-allow-origin'), APP);
  t.match(pre.headers.get('access-control-allow-methods'), /POST/);
  t.match(pre.headers.get('access-control-allow-headers')?.toLowerCase(), /authorization/);
  t.match(pre.headers.get('access-control-allow-headers')?.toLowerCase(), /content-type/);
  t.equal(pre.headers.get('access-control-allow-credentials'), null, 'no cookies');
  t.match(pre.headers.get('vary'), /Origin/);

  const key = await createKey(h, 1000);
  const created = await api(h, 'POST', '/v1/voice/sessions', {
    headers: { ...bearer(key.key), origin: APP },
    json: { model: 'local/echo-1', mode: 'speech_to_speech' },
  });
  t.equal(created.status, 201);
  t.equal(created.headers.get('access-control-allow-origin'), APP);
  t.match(created.headers.get('access-control-expose-headers'), /X-Request-Id/);

  const models = await api(h, 'GET', '/v1/models', { headers: { origin: 'http://localhost:5173' } });
  t.equal(models.headers.get('access-control-allow-origin'), 'http://localhost:5173', 'each listed origin');
  const error = await api(h, 'POST', '/v1/voice/sessions', { headers: { origin: APP }, json: {} });
  t.equal(error.status, 401);
  t.equal(error.headers.get('access-control-allow-origin'), APP, 'errors are readable by the page too');
});

t.test('an origin not listed, and the operator API: no CORS headers, preflight 404', async (t) => {
  const h = await startControlPlane(t, { env: { CORS_ALLOWED_ORIGINS: APP } });
  const pre = await preflight(h, '/v1/realtime/client_secrets', EVIL);
  t.equal(pre.status, 404);
  t.equal(pre.headers.get('access-control-allow-origin'), null);
  const res = await api(h, 'GET', '/v1/models', { headers: { origin: EVIL } });
  t.equal(res.status, 200);
  t.equal(res.headers.get('access-control-allow-origin'), null);

  const admin = await preflight(h, '/admin/v1/keys', APP);
  t.equal(admin.status, 401, 'operator OPTIONS still checks the admin token');
  t.equal(admin.headers.get('access-control-allow-origin'), null);
  const adminGet = await api(h, 'POST', '/admin/v1/keys', { headers: { ...adminHeaders, origin: APP }, json: { balance_cents: 1 } });
  t.equal(adminGet.status, 201);
  t.equal(adminGet.headers.get('access-control-allow-origin'), null, 'never offered to browsers');
});

t.test('unset (the default): no CORS at all', async (t) => {
  const h = await startControlPlane(t);
  const pre = await preflight(h, '/v1/voice/sessions', APP);
  t.equal(pre.status, 404);
  t.equal(pre.headers.get('access-control-allow-origin'), null);
  const res = await api(h, 'GET', '/v1/models', { headers: { origin: APP } });
  t.equal(res.headers.get('access-control-allow-origin'), null);
});

t.test('* allows any origin; a value that is not an origin is refused at start', async (t) => {
  const h = await startControlPlane(t, { env: { CORS_ALLOWED_ORIGINS: '*' } });
  const pre = await preflight(h, '/v1/voice/sessions', EVIL);
  t.equal(pre.status, 204);
  t.equal(pre.headers.get('access-control-allow-origin'), EVIL);
  t.throws(() => loadConfig({ CORS_ALLOWED_ORIGINS: 'https://app.example.com/path' }), /CORS_ALLOWED_ORIGINS/);
  t.throws(() => loadConfig({ CORS_ALLOWED_ORIGINS: 'app.example.com' }), /CORS_ALLOWED_ORIGINS/);
});
