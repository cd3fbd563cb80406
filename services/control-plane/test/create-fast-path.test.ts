// Issue 13: POST /v1/voice/sessions with a plain JSON body is answered ahead of the middleware chain
// (createFastPath). A request with an Origin always goes through the chain (CORS; none is configured here, so the
// chain adds nothing), so every request below is sent both ways and must be answered and logged alike.
import { connect } from 'node:net';
import t from 'tap';
import type { Request } from 'express';
import { isPlainJsonBody } from '../src/http/body.js';
import { api, bearer, CREATE_BODY, createKey, startControlPlane, type ApiResponse, type Harness } from './helpers.js';

const LIMIT = 65_536;
const ORIGIN = 'https://app.example';

t.test('isPlainJsonBody: only what express.json reads the same way', async (t) => {
  const req = (headers: Record<string, string>) => ({ headers }) as unknown as Request;
  const json = { 'content-type': 'application/json', 'content-length': '40' };
  t.ok(isPlainJsonBody(req(json), LIMIT), 'application/json with a length');
  t.ok(isPlainJsonBody(req({ ...json, 'content-type': 'application/json; charset=utf-8' }), LIMIT));
  t.ok(isPlainJsonBody(req({ ...json, 'content-type': 'Application/JSON; Charset=UTF-8' }), LIMIT), 'names are case-insensitive');
  t.ok(isPlainJsonBody(req({ ...json, 'content-length': String(LIMIT) }), LIMIT), 'at the limit');
  t.notOk(isPlainJsonBody(req({ ...json, 'content-length': String(LIMIT + 1) }), LIMIT), 'over the limit');
  t.notOk(isPlainJsonBody(req({ ...json, 'content-length': '0' }), LIMIT), 'empty');
  t.notOk(isPlainJsonBody(req({ 'content-type': 'application/json' }), LIMIT), 'no length (chunked)');
  t.notOk(isPlainJsonBody(req({ ...json, 'transfer-encoding': 'chunked' }), LIMIT));
  t.notOk(isPlainJsonBody(req({ ...json, 'content-encoding': 'gzip' }), LIMIT), 'compressed');
  t.notOk(isPlainJsonBody(req({ ...json, 'content-type': 'application/json; charset=utf-16' }), LIMIT), 'another charset');
  t.notOk(isPlainJsonBody(req({ ...json, 'content-type': 'text/plain' }), LIMIT));
  t.notOk(isPlainJsonBody(req({ ...json, 'content-type': 'application/vnd.api+json' }), LIMIT));
  t.notOk(isPlainJsonBody(req({ 'content-length': '40' }), LIMIT), 'no Content-Type');
});

/** What must be the same whichever way a create was answered: everything but its ids and times. */
function shape(res: ApiResponse): unknown {
  const leaves = (v: unknown): unknown =>
    v !== null && typeof v === 'object'
      ? // The wallet's balance is lower after each create; times move on.
        Object.fromEntries(
          Object.entries(v).map(([k, x]) => [k, ['balance_cents', 'created_at', 'expires_at'].includes(k) ? typeof x : leaves(x)]),
        )
      : typeof v === 'string' && /^(vs|req|att|ek)_|^\d{4}-\d\d-\d\dT|^[0-9a-f]{32}$|^wss?:/.test(v)
        ? typeof v
        : v;
  return {
    status: res.status,
    headers: [...res.headers.keys()].sort(),
    contentType: res.headers.get('content-type'),
    replayed: res.headers.get('idempotent-replayed'),
    body: leaves(res.body),
  };
}

function accessLine(h: Harness, requestId: string | null): unknown {
  const line = h.logLines.map((l) => JSON.parse(l)).find((l) => l.msg === 'request completed' && l.request_id === requestId);
  if (!line) return undefined;
  const { method, path, status, code, aborted } = line;
  return { method, path, status, code, aborted };
}

t.test('every create is answered and logged as the chain answers it', async (t) => {
  const h = await startControlPlane(t);
  const key = await createKey(h, 100_000);
  const json = (body: unknown) => JSON.stringify(body);
  const cases: [string, { raw: string | Buffer; headers?: Record<string, string>; authorization?: string }][] = [
    ['a valid body', { raw: json(CREATE_BODY) }],
    ['charset=utf-8', { raw: json(CREATE_BODY), headers: { 'content-type': 'application/json; charset=utf-8' } }],
    ['charset in capitals', { raw: json(CREATE_BODY), headers: { 'content-type': 'application/json; charset=UTF-8' } }],
    ['a byte order mark', { raw: '\uFEFF' + json(CREATE_BODY) }],
    ['leading whitespace', { raw: ' \r\n\t' + json(CREATE_BODY) }],
    ['at the size limit', { raw: json(CREATE_BODY).padEnd(LIMIT, ' ') }],
    ['over the size limit', { raw: json(CREATE_BODY).padEnd(LIMIT + 1, ' ') }],
    ['malformed JSON', { raw: '{"model":' }],
    ['a string', { raw: '"local/echo-1"' }],
    ['a number', { raw: '1' }],
    ['null', { raw: 'null' }],
    ['an array', { raw: '[]' }],
    ['only whitespace', { raw: '   ' }],
    ['an unknown field', { raw: json({ ...CREATE_BODY, extra: 1 }) }],
    ['an unknown model', { raw: json({ model: 'nope/none', mode: 'speech_to_speech' }) }],
    [
      'invalid UTF-8',
      { raw: Buffer.concat([Buffer.from('{"model":"'), Buffer.from([0xff, 0xfe]), Buffer.from('","mode":"speech_to_speech"}')]) },
    ],
    ['text/plain', { raw: json(CREATE_BODY), headers: { 'content-type': 'text/plain' } }],
    ['a malformed body and a key of the wrong shape', { raw: '{', authorization: 'Bearer nope' }],
    ['a malformed body and an unknown key', { raw: '{', authorization: `Bearer vr_sk_${'x'.repeat(40)}` }],
    ['a valid body and an unknown key', { raw: json(CREATE_BODY), authorization: `Bearer vr_sk_${'x'.repeat(40)}` }],
    ['an Idempotency-Key too long', { raw: json(CREATE_BODY), headers: { 'idempotency-key': 'k'.repeat(300) } }],
  ];
  for (const [name, c] of cases) {
    const send = (extra: Record<string, string>) =>
      api(h, 'POST', '/v1/voice/sessions', {
        headers: {
          'content-type': 'application/json',
          authorization: c.authorization ?? bearer(key.key).authorization,
          ...c.headers,
          ...extra,
        },
        raw: c.raw,
      });
    const fast = await send({});
    const chain = await send({ origin: ORIGIN });
    t.same(shape(fast), shape(chain), `${name}: the same answer (${fast.status})`);
    t.same(
      accessLine(h, fast.headers.get('x-request-id')),
      accessLine(h, chain.headers.get('x-request-id')),
      `${name}: the same access line`,
    );
    t.ok(accessLine(h, fast.headers.get('x-request-id')), `${name}: logged`);
  }

  // Idempotency: a replay is a replay whichever way the first create came.
  for (const [first, second] of [
    [{}, {}],
    [{ origin: ORIGIN }, {}],
    [{}, { origin: ORIGIN }],
  ] as Record<string, string>[][]) {
    const idem = `idem-${Math.random().toString(36).slice(2)}`;
    const send = (extra: Record<string, string>, body: unknown = CREATE_BODY) =>
      api(h, 'POST', '/v1/voice/sessions', { headers: { ...bearer(key.key), 'idempotency-key': idem, ...extra }, json: body });
    const a = await send(first!);
    const b = await send(second!);
    t.equal(a.status, 201);
    t.equal(b.status, 201);
    t.equal(b.body.id, a.body.id, 'the same session');
    t.equal(b.headers.get('idempotent-replayed'), 'true');
    const conflict = await send(second!, { ...CREATE_BODY, model: 'local/another' });
    t.same([conflict.status, conflict.body?.error?.code], [409, 'idempotency_conflict'], 'another request under the key');
  }
});

/** Sends a create whose body stops short of its Content-Length, then half-closes the connection. */
function truncatedCreate(h: Harness, key: string, extra: string): Promise<void> {
  const { port } = new URL(h.url);
  return new Promise((resolve) => {
    const socket = connect(Number(port), '127.0.0.1', () => {
      socket.end(
        `POST /v1/voice/sessions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\n` +
          `Content-Length: 200\r\n${extra}\r\n{"model":"local/echo-1"`,
      );
    });
    socket.on('data', () => {});
    socket.on('error', () => resolve());
    socket.on('close', () => resolve());
  });
}

t.test('a body cut short is logged the same way and leaves the server serving', async (t) => {
  const h = await startControlPlane(t);
  const key = await createKey(h, 100_000);
  const lines = () => h.logLines.map((l) => JSON.parse(l)).filter((l) => l.msg === 'request completed' && l.path === '/v1/voice/sessions');
  const seen = async (n: number) => {
    for (let i = 0; i < 200 && lines().length < n; i++) await new Promise((r) => setTimeout(r, 25));
    return lines();
  };
  await truncatedCreate(h, key.key, '');
  await truncatedCreate(h, key.key, `Origin: ${ORIGIN}\r\n`);
  const [fast, chain] = await seen(2);
  const fields = (l: Record<string, unknown> | undefined) => l && { status: l.status, code: l.code, aborted: l.aborted };
  t.ok(fast, 'the cut-short create has its access line');
  t.same(fields(fast), fields(chain), 'the same as through the chain');
  t.equal((await api(h, 'POST', '/v1/voice/sessions', { headers: bearer(key.key), json: CREATE_BODY })).status, 201, 'still serving');
});
