// The page's HTTP layer in Node: the globals it reads (document.baseURI, sessionStorage, fetch) stood in for.
import t from 'tap';

const calls: { url: string; init: RequestInit }[] = [];
let answer: () => Response = () => new Response('{}');
const storage = new Map<string, string>();
Object.assign(globalThis, {
  document: { baseURI: 'http://gateway.test/console/' },
  sessionStorage: {
    getItem: (k: string) => storage.get(k) ?? null,
    setItem: (k: string, v: string) => storage.set(k, v),
    removeItem: (k: string) => storage.delete(k),
  },
});
globalThis.fetch = async (url, init) => {
  calls.push({ url: String(url), init: init ?? {} });
  return answer();
};
const { ApiError, admin, adminToken, request } = await import('../web/api.js');

t.test('operator calls carry the tab’s admin token to the gateway origin', async (t) => {
  adminToken.set('adm_test');
  answer = () => Response.json({ data: [], has_more: false });
  await admin.get('/keys?limit=1');
  t.equal(calls.at(-1)?.url, 'http://gateway.test/admin/v1/keys?limit=1');
  t.same(calls.at(-1)?.init.headers, { Authorization: 'Bearer adm_test' });
  adminToken.clear();
});

t.test('an ErrorResponse becomes an ApiError with its code and message', async (t) => {
  answer = () => Response.json({ error: { code: 'invalid_admin_token', message: 'No.', type: 'authentication_error' } }, { status: 401 });
  const err = await request('GET', '/admin/v1/keys').catch((e: unknown) => e);
  t.ok(err instanceof ApiError);
  t.match(err, { status: 401, code: 'invalid_admin_token', message: 'No.' });
});

t.test('a non-JSON answer (a proxy’s HTML page) is an ApiError naming the path and status, not a SyntaxError', async (t) => {
  answer = () => new Response('<html>Bad Gateway</html>', { status: 502, headers: { 'Content-Type': 'text/html' } });
  const failed = await request('GET', '/admin/v1/keys').catch((e: unknown) => e);
  t.ok(failed instanceof ApiError, 'an ApiError');
  t.match(failed, { status: 502, code: 'http_error', message: 'GET /admin/v1/keys: HTTP 502' });
  answer = () => new Response('<html>ok?</html>', { status: 200 });
  const odd = await request('GET', '/v1/models').catch((e: unknown) => e);
  t.ok(odd instanceof ApiError, 'a 2xx without JSON is an ApiError too');
  t.match(odd, { status: 200, code: 'invalid_response', message: /GET \/v1\/models: HTTP 200 without a JSON body/ });
});

t.test('a network failure names the path', async (t) => {
  answer = () => {
    throw new TypeError('fetch failed');
  };
  const err = await request('POST', '/console/api/playground/client_secrets', { body: {} }).catch((e: unknown) => e);
  t.match(err, { status: 0, code: 'network_error', message: /POST \/console\/api\/playground\/client_secrets failed: fetch failed/ });
});
