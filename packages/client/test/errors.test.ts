import t from 'tap';
import { S2SApiError, S2SClient, S2SConnectionError, S2SError } from '../src/index.js';

/** A fetch that answers from a table, so that error mapping is tested without I/O. */
function fakeFetch(answer: (url: string, init: RequestInit) => Response | Promise<Response>): typeof fetch {
  return (async (input: string | URL | Request, init?: RequestInit) => answer(String(input), init ?? {})) as typeof fetch;
}

const errorBody = (code: string, type: string) => ({ error: { type, code, message: `${code} happened`, request_id: 'req_1' } });

t.test('an error status becomes S2SApiError with the ErrorResponse, the URL and the method', async (t) => {
  const client = new S2SClient({
    baseUrl: 'http://gw.example:9/',
    apiKey: 'vr_sk_x',
    fetch: fakeFetch(() =>
      Response.json(errorBody('insufficient_wallet_balance', 'billing_error'), { status: 402, headers: { 'Retry-After': '7' } }),
    ),
  });
  const err = await client.sessions.create({ model: 'local/echo-1' }).catch((e: unknown) => e);
  t.ok(err instanceof S2SApiError);
  t.ok(err instanceof S2SError);
  const e = err as S2SApiError;
  t.equal(e.status, 402);
  t.equal(e.code, 'insufficient_wallet_balance');
  t.equal(e.type, 'billing_error');
  t.equal(e.requestId, 'req_1');
  t.equal(e.retryAfter, 7);
  t.equal(e.url, 'http://gw.example:9/v1/voice/sessions');
  t.equal(e.method, 'POST');
  t.same(e.body, errorBody('insufficient_wallet_balance', 'billing_error'));
  t.match(e.message, /^POST http:\/\/gw\.example:9\/v1\/voice\/sessions failed with 402 insufficient_wallet_balance/);
});

t.test('a body that is no ErrorResponse still names the status', async (t) => {
  const client = new S2SClient({
    baseUrl: 'http://gw.example',
    fetch: fakeFetch(() => new Response('<html>bad gateway</html>', { status: 502 })),
  });
  const e = (await client.models.list().catch((x: unknown) => x)) as S2SApiError;
  t.ok(e instanceof S2SApiError);
  t.equal(e.body, null);
  t.equal(e.code, 'http_502');
  t.match(e.message, 'GET http://gw.example/v1/models failed with 502 HTTP 502');
});

t.test('a network failure names the URL and the cause fetch hides', async (t) => {
  const client = new S2SClient({
    baseUrl: 'http://127.0.0.1:9',
    apiKey: 'vr_sk_x',
    fetch: fakeFetch(() => {
      const cause = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:9'), { code: 'ECONNREFUSED' });
      throw new TypeError('fetch failed', { cause });
    }),
  });
  const e = (await client.sessions.get('vs_1').catch((x: unknown) => x)) as S2SConnectionError;
  t.ok(e instanceof S2SConnectionError);
  t.equal(e.url, 'http://127.0.0.1:9/v1/voice/sessions/vs_1');
  t.equal(e.message, 'GET http://127.0.0.1:9/v1/voice/sessions/vs_1 failed: fetch failed: connect ECONNREFUSED 127.0.0.1:9');
});

t.test('requests: Idempotency-Key, bearer key, encoded ids; the catalog without a key', async (t) => {
  const seen: { url: string; init: RequestInit }[] = [];
  const client = new S2SClient({
    baseUrl: 'http://gw.example',
    apiKey: 'vr_sk_secret',
    fetch: fakeFetch((url, init) => {
      seen.push({ url, init });
      return Response.json({ ok: true }, { status: url.endsWith('/sessions') ? 201 : 200 });
    }),
  });
  await client.sessions.create({ model: 'local/echo-1', idempotencyKey: 'k-1' });
  await client.sessions.create({ model: 'local/echo-1' });
  await client.sessions.end('a/b', { reason: 'timeout' });
  await client.models.list();
  const [create, createAuto, end, models] = seen.map((s) => ({ ...s, headers: s.init.headers as Record<string, string> }));
  t.equal(create!.headers['Idempotency-Key'], 'k-1');
  t.equal(create!.headers.Authorization, 'Bearer vr_sk_secret');
  t.same(JSON.parse(String(create!.init.body)), { model: 'local/echo-1', mode: 'speech_to_speech' });
  t.match(createAuto!.headers['Idempotency-Key'], /^[0-9a-f-]{36}$/);
  t.equal(end!.url, 'http://gw.example/v1/voice/sessions/a%2Fb/end');
  t.same(JSON.parse(String(end!.init.body)), { reason: 'timeout' });
  t.equal(models!.headers.Authorization, undefined);

  const keyless = new S2SClient({ baseUrl: 'http://gw.example', fetch: fakeFetch(() => Response.json({})) });
  await t.rejects(keyless.sessions.get('vs_1'), /needs an API key/);
  t.throws(() => new S2SClient({ baseUrl: 'gw.example' }), /http\(s\) URL/);
});
