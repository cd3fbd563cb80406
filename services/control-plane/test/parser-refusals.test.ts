// Issue 8, defect 6: requests Node's HTTP parser refuses still get an ErrorResponse with a request id,
// and OPTIONS answers a documented ErrorResponse instead of express's automatic 200 text/plain.
import t from 'tap';
import { ErrorResponse } from '@s2s/contract';
import { api, createKey, startControlPlane } from './helpers.js';
import { rawRequest } from './raw-http.js';

const REFUSALS: [string, string, number, string][] = [
  ['a control byte in a header value', 'GET /v1/models HTTP/1.1\r\nHost: a\r\nIdempotency-Key: a\x01b\r\n\r\n', 400, 'invalid_request'],
  ['a space in a header name', 'GET /v1/models HTTP/1.1\r\nHost: a\r\nBad Name: x\r\n\r\n', 400, 'invalid_request'],
  ['an unknown method', 'FOO /v1/models HTTP/1.1\r\nHost: a\r\n\r\n', 400, 'invalid_request'],
  [
    'Transfer-Encoding with Content-Length',
    'POST /v1/voice/sessions HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n0\r\n\r\n',
    400,
    'invalid_request',
  ],
  ['a malformed request line', 'GET\r\n\r\n', 400, 'invalid_request'],
  [
    'a bad chunk size',
    'POST /v1/voice/sessions HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n',
    400,
    'invalid_request',
  ],
  [
    'headers over 16 KiB',
    `GET /v1/models HTTP/1.1\r\nHost: a\r\nX-Big: ${'a'.repeat(17_000)}\r\n\r\n`,
    431,
    'request_header_fields_too_large',
  ],
  [
    'many headers over 16 KiB',
    `GET /v1/models HTTP/1.1\r\nHost: a\r\n${'X-H: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n'.repeat(400)}\r\n`,
    431,
    'request_header_fields_too_large',
  ],
];

t.test('parser-level refusals answer an ErrorResponse with a request id and X-Request-Id', async (t) => {
  const h = await startControlPlane(t);
  const seen = new Set<string>();
  for (const [name, raw, status, code] of REFUSALS) {
    const res = await rawRequest(h.url, raw);
    t.equal(res.status, status, name);
    t.equal(res.headers['content-type'], 'application/json; charset=utf-8', `${name}: JSON`);
    t.equal(res.headers['connection'], 'close', `${name}: the connection closes`);
    let body: unknown;
    try {
      body = JSON.parse(res.body);
    } catch {
      body = undefined;
    }
    t.ok(ErrorResponse.safeParse(body).success, `${name}: ErrorResponse`);
    const e = (body as ErrorResponse | undefined)?.error;
    t.equal(e?.code, code, `${name}: code`);
    t.equal(e?.type, 'invalid_request_error', `${name}: type`);
    t.match(res.headers['x-request-id'], /^req_[0-9a-f]{32}$/, `${name}: X-Request-Id`);
    t.equal(e?.request_id, res.headers['x-request-id'], `${name}: the body repeats it`);
    t.notOk(seen.has(res.headers['x-request-id'] ?? ''), `${name}: fresh`);
    seen.add(res.headers['x-request-id'] ?? '');
    t.equal(Number(res.headers['content-length']), Buffer.byteLength(res.body), `${name}: framed by Content-Length`);
  }
  const lines = h.logLines.map((l) => JSON.parse(l)).filter((l) => l.msg === 'request refused by the HTTP parser');
  t.equal(lines.length, REFUSALS.length, 'one log line per refusal');
  t.ok(
    lines.every((l) => /^req_/.test(l.request_id) && typeof l.parser_code === 'string'),
    'with the request id and the parser code',
  );
  t.notOk(h.logLines.join('').includes('a\x01b'), 'the refused header value is not logged');
});

t.test('a refusal after a good request on a keep-alive connection answers too; the server keeps serving', async (t) => {
  const h = await startControlPlane(t);
  const res = await rawRequest(h.url, 'GET /healthz HTTP/1.1\r\nHost: a\r\n\r\nGET /healthz HTTP/1.1\r\nHost: a\r\nX: \x7f\x01\r\n\r\n', {
    responses: 2,
  });
  t.equal(res.status, 200, 'the first request is answered');
  t.equal(res.next?.status, 400, 'the refused one too');
  t.equal(JSON.parse(res.next?.body ?? '{}').error?.code, 'invalid_request');
  t.equal((await api(h, 'GET', '/healthz')).status, 200, 'still serving');
});

t.test('OPTIONS answers 404 not_found as an ErrorResponse (401 first on the operator API)', async (t) => {
  const h = await startControlPlane(t);
  const key = await createKey(h, 100);
  const paths: [string, number, string][] = [
    ...['/v1/models', '/v1/voice/sessions', '/v1/voice/sessions/vs_x', '/v1/voice/sessions/vs_x/end', '/healthz', '/', '*'].map(
      (p): [string, number, string] => [p, 404, 'not_found'],
    ),
    ['/admin/v1/keys', 401, 'invalid_admin_token'],
    [`/admin/v1/wallets/${key.wallet_id}`, 401, 'invalid_admin_token'],
  ];
  for (const [path, status, code] of paths) {
    const res = await rawRequest(
      h.url,
      `OPTIONS ${path} HTTP/1.1\r\nHost: a\r\nOrigin: https://example.com\r\nAccess-Control-Request-Method: POST\r\n\r\n`,
    );
    t.equal(res.status, status, `OPTIONS ${path}`);
    const body = JSON.parse(res.body || '{}');
    t.ok(ErrorResponse.safeParse(body).success, `OPTIONS ${path}: ErrorResponse`);
    t.equal(body.error?.code, code, `OPTIONS ${path}`);
    t.equal(body.error?.request_id, res.headers['x-request-id']);
    t.equal(res.headers['allow'], undefined, 'no automatic Allow header');
    t.equal(res.headers['access-control-allow-origin'], undefined, 'no CORS answer');
  }
});
