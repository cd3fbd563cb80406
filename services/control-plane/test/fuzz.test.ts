// Issue 8, item 7 (HTTP): property-based fuzzing of every route of the public and the operator API.
// Whatever arrives, the answer is documented: a status and code from api-v1.md / decisions.md, an
// ErrorResponse whose request_id is the X-Request-Id; never a 5xx, never a crash. Runs are bounded so the
// file takes a few seconds; fast-check prints the seed and the shrunk request of any failure.
import t, { type Test } from 'tap';
import fc from 'fast-check';
import { ERROR_STATUS, ErrorResponse, errorTypeForStatus, ModelList, VoiceSession } from '@s2s/contract';
import { checkLedgerInvariants } from '@s2s/db/testing';
import { ADMIN_TOKEN, api, createKey, createSession, startControlPlane } from './helpers.js';
import { rawRequest, type RawResponse } from './raw-http.js';

const RUNS = Number(process.env.FUZZ_RUNS ?? 150);

/** Statuses the documents allow the control plane to answer (431: headers over the parser's limit). */
const DOCUMENTED_STATUSES = new Set([200, 201, 400, 401, 402, 404, 409, 410, 429, 431]);

interface Fixture {
  url: string;
  key: string;
  otherKey: string;
  keyId: string;
  walletId: string;
  sessionId: string;
}

function checkAnswer(res: RawResponse, method: string, what: string): string | null {
  if (!DOCUMENTED_STATUSES.has(res.status)) return `${what}: undocumented status ${res.status} ${res.body.slice(0, 300)}`;
  const requestId = res.headers['x-request-id'];
  if (!/^req_[0-9a-f]{32}$/.test(requestId ?? '')) return `${what}: no X-Request-Id`;
  if (method === 'HEAD') return null;
  let body: unknown;
  try {
    body = JSON.parse(res.body);
  } catch {
    return `${what}: body is not JSON: ${res.body.slice(0, 200)}`;
  }
  if (res.status < 400) return null;
  const parsed = ErrorResponse.safeParse(body);
  if (!parsed.success) return `${what}: not an ErrorResponse: ${res.body.slice(0, 300)}`;
  const e = parsed.data.error;
  if ((ERROR_STATUS as Record<string, number>)[e.code] !== res.status) return `${what}: code ${e.code} with status ${res.status}`;
  if (e.type !== errorTypeForStatus(res.status)) return `${what}: type ${e.type} with status ${res.status}`;
  if (e.request_id !== requestId) return `${what}: request_id differs from X-Request-Id`;
  return null;
}

function rawHttp(method: string, path: string, headers: [string, string][], body: string | undefined): Buffer {
  const lines = [`${method} ${path} HTTP/1.1`, 'Host: fuzz.test', 'Connection: close'];
  for (const [name, value] of headers) lines.push(`${name}: ${value}`);
  // A chunked request without a body still ends (a last chunk), so the server can answer it.
  const chunked = headers.some(([n, v]) => n.toLowerCase() === 'transfer-encoding' && v === 'chunked');
  const payload = body === undefined ? Buffer.from(chunked ? '0\r\n\r\n' : '', 'latin1') : Buffer.from(body, 'utf8');
  if (body !== undefined) lines.push(`Content-Length: ${payload.length}`);
  return Buffer.concat([Buffer.from(`${lines.join('\r\n')}\r\n\r\n`, 'latin1'), payload]);
}

// ---------------------------------------------------------------- arbitraries

const oddString = fc.oneof(
  fc.string({ maxLength: 40 }),
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.constantFrom('', '\u0000', 'a\u0000b', 'x'.repeat(300), '..', '../..', '%', '%00', '%zz', '\ud800', '😀', ' ', 'null', '{}'),
);

/** One path segment: a real id, something like one, or anything at all (percent-encoded). */
const segment = (real: string[]) =>
  fc.oneof(
    fc.constantFrom(...real),
    fc.constantFrom('vs_x', 'key_x', 'wal_x', '%00', 'vs_%00', 'a'.repeat(256), '%E0%A4%A', '%ED%A0%80', '%2F', '.', '%20'),
    oddString.map(encodeSegment),
  );

/** encodeURIComponent, except that a lone surrogate (which it refuses) becomes its raw UTF-8 bytes. */
function encodeSegment(s: string): string {
  try {
    return encodeURIComponent(s);
  } catch {
    return '%ED%A0%80';
  }
}

const numberish = fc.oneof(
  fc.integer(),
  fc.constantFrom(0, -1, 1, 2 ** 31 - 1, 2 ** 31, 2 ** 53 - 1, 2 ** 53, 1e20, 1.5, -0, Number.MAX_VALUE),
  fc.double(),
  fc.string({ maxLength: 10 }),
  fc.constant(null),
  fc.boolean(),
);

const pricing = fc.record(
  { per_minute: numberish, audio_in_token: numberish, audio_out_token: numberish, relay_fee_milli_cents: numberish },
  { requiredKeys: [] },
);

const bodies = fc.oneof(
  fc.record(
    {
      model: fc.oneof(fc.constantFrom('local/echo-1', 'local/unapproved-1', 'acme/none'), oddString),
      mode: fc.oneof(fc.constant('speech_to_speech'), oddString),
    },
    { requiredKeys: [] },
  ),
  fc.record(
    { reason: fc.oneof(fc.constantFrom('client_closed', 'timeout', 'error'), oddString), usage_cents: numberish },
    { requiredKeys: [] },
  ),
  fc.record(
    { balance_cents: numberish, label: oddString, max_live_sessions: numberish, max_creates_per_minute: numberish },
    { requiredKeys: [] },
  ),
  fc.record({ amount_cents: numberish }, { requiredKeys: [] }),
  fc.record(
    {
      id: fc.oneof(fc.constantFrom('fuzz/model-1', 'local/echo-1'), oddString),
      display_name: oddString,
      owned_by: oddString,
      provider: fc.oneof(fc.constantFrom('local', 'openai', 'gemini'), oddString),
      provider_model: oddString,
      enabled: fc.oneof(fc.boolean(), numberish),
      approved: fc.oneof(fc.boolean(), numberish),
      pricing,
    },
    { requiredKeys: [] },
  ),
  fc.jsonValue({ maxDepth: 3 }),
);

const bodyText = fc.oneof(
  bodies.map((b) => JSON.stringify(b)),
  fc.string({ maxLength: 60 }),
  fc.constantFrom('{', '{"model":', '[]', 'null', '"x"', '{"balance_cents":1e400}', '{"a":' + '['.repeat(2000)),
);

function routes(f: Fixture): fc.Arbitrary<[string, string]> {
  const session = segment([f.sessionId]);
  const key = segment([f.keyId]);
  const wallet = segment([f.walletId]);
  return fc.oneof(
    fc.constant<[string, string]>(['GET', '/v1/models']),
    fc.constant<[string, string]>(['POST', '/v1/voice/sessions']),
    session.map((s): [string, string] => ['GET', `/v1/voice/sessions/${s}`]),
    session.map((s): [string, string] => ['POST', `/v1/voice/sessions/${s}/end`]),
    fc.constant<[string, string]>(['POST', '/admin/v1/keys']),
    key.map((k): [string, string] => ['GET', `/admin/v1/keys/${k}`]),
    key.map((k): [string, string] => ['PATCH', `/admin/v1/keys/${k}`]),
    key.map((k): [string, string] => ['POST', `/admin/v1/keys/${k}/revoke`]),
    wallet.map((w): [string, string] => ['POST', `/admin/v1/wallets/${w}/credit`]),
    wallet.map((w): [string, string] => ['GET', `/admin/v1/wallets/${w}`]),
    fc.constant<[string, string]>(['PUT', '/admin/v1/models']),
    fc.constantFrom<[string, string]>(['GET', '/healthz'], ['GET', '/readyz'], ['GET', '/v1/realtime?model=local/echo-1']),
    fc
      .tuple(fc.constantFrom('/', '/v1', '/admin', '/admin/v1/', '/v1/voice/sessions/'), oddString)
      .map(([p, s]): [string, string] => ['GET', `${p}${encodeSegment(s)}`]),
  );
}

const methods = fc.constantFrom('GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD', 'OPTIONS', 'CONNECT', 'TRACE');

function authHeaders(f: Fixture) {
  return fc.constantFrom<[string, string][]>(
    [],
    [['Authorization', `Bearer ${f.key}`]],
    [['Authorization', `Bearer ${f.otherKey}`]],
    [['Authorization', `Bearer ${ADMIN_TOKEN}`]],
    [['Authorization', 'Bearer vr_sk_' + 'A'.repeat(40)]],
    [['Authorization', 'Basic x']],
    [['Authorization', 'Bearer']],
    [
      ['Authorization', `Bearer ${f.key}`],
      ['Authorization', `Bearer ${ADMIN_TOKEN}`],
    ],
  );
}

const extraHeaders = fc.array(
  fc.oneof(
    fc.constantFrom<[string, string]>(
      ['Content-Type', 'application/json'],
      ['Content-Type', 'text/plain'],
      ['Content-Type', 'application/json; charset=latin1'],
      ['Content-Type', 'application/json; charset=utf-16'],
      ['Content-Encoding', 'gzip'],
      ['Idempotency-Key', 'fuzz-1'],
      ['Idempotency-Key', ''],
      ['Idempotency-Key', 'x'.repeat(300)],
      ['Idempotency-Key', 'caf\u00e9'],
      ['X-Request-Id', 'client'],
      ['Expect', '100-continue'],
      ['Upgrade', 'websocket'],
      ['Transfer-Encoding', 'chunked'],
    ),
    fc.tuple(
      fc.constant('Idempotency-Key'),
      fc.string({ minLength: 1, maxLength: 20 }).filter((s) => /^[\x20-\x7e]+$/.test(s.trim()) && s === s.trim()),
    ),
  ),
  { maxLength: 3 },
);

// ---------------------------------------------------------------- properties

t.test('fuzzed requests on every route answer only documented statuses and ErrorResponses', async (t) => {
  const h = await startControlPlane(t, { env: { END_WAIT_MS: '50', KEY_MAX_CREATES_PER_MINUTE: '100000' } });
  const owner = await createKey(h, 1_000_000);
  const other = await createKey(h, 1_000_000);
  const session = await createSession(h, owner.key);
  const f: Fixture = {
    url: h.url,
    key: owner.key,
    otherKey: other.key,
    keyId: owner.id,
    walletId: owner.wallet_id,
    sessionId: session.body.id,
  };

  const request = fc.record({
    route: routes(f),
    method: fc.option(methods, { freq: 3 }),
    auth: authHeaders(f),
    headers: extraHeaders,
    body: fc.option(bodyText, { freq: 4 }),
  });
  await fc.assert(
    fc.asyncProperty(request, async (r) => {
      const method = r.method ?? r.route[0];
      const what = `${method} ${r.route[1]}`;
      const res = await rawRequest(h.url, rawHttp(method, r.route[1], [...r.auth, ...r.headers], r.body ?? undefined), {
        head: method === 'HEAD',
      });
      const problem = checkAnswer(res, method, what);
      if (problem) throw new Error(problem);
    }),
    { numRuns: RUNS * 4 },
  );
  await checkStillHealthy(t, h, f);
});

t.test('fuzzed operator requests with the admin token: documented answers, exact amounts', async (t) => {
  const h = await startControlPlane(t);
  const owner = await createKey(h, 1000);
  const admin: [string, string][] = [
    ['Authorization', `Bearer ${ADMIN_TOKEN}`],
    ['Content-Type', 'application/json'],
  ];
  const operation = fc.oneof(
    fc.record({ path: fc.constant('/admin/v1/keys'), method: fc.constant('POST'), body: bodies }),
    fc.record({ path: fc.constant(`/admin/v1/keys/${owner.id}`), method: fc.constant('PATCH'), body: bodies }),
    fc.record({ path: fc.constant(`/admin/v1/wallets/${owner.wallet_id}/credit`), method: fc.constant('POST'), body: bodies }),
    fc.record({ path: fc.constant('/admin/v1/models'), method: fc.constant('PUT'), body: bodies }),
  );
  await fc.assert(
    fc.asyncProperty(operation, async (op) => {
      const res = await rawRequest(h.url, rawHttp(op.method, op.path, admin, JSON.stringify(op.body)));
      const problem = checkAnswer(res, op.method, `${op.method} ${op.path}`);
      if (problem) throw new Error(problem);
      if (res.status === 200 && op.path.endsWith('/credit')) {
        const wallet = JSON.parse(res.body);
        if (!Number.isSafeInteger(wallet.balance_cents)) throw new Error(`balance ${wallet.balance_cents} is not exact`);
      }
    }),
    { numRuns: RUNS * 2 },
  );
  const models = await api(h, 'GET', '/v1/models');
  t.equal(models.status, 200);
  t.ok(ModelList.safeParse(models.body).success, 'the catalog still has its exact shape');
  t.same(await checkLedgerInvariants(h.db.pool), [], 'ledger invariants hold');
  t.notOk(
    h.logLines.some((l) => l.includes('"request failed"')),
    'no request failed',
  );
});

t.test('fuzzed bytes at the parser level: an ErrorResponse whenever an answer is possible', async (t) => {
  const h = await startControlPlane(t);
  const tokenChar = fc.constantFrom(...'abcXYZ-_.!#$%&*+^|~0123456789'.split(''));
  const byte = fc.integer({ min: 0, max: 255 }).map((b) => String.fromCharCode(b));
  const request = fc.record({
    method: fc.oneof(
      methods,
      fc.string({ unit: tokenChar, minLength: 1, maxLength: 12 }),
      fc.string({ unit: byte, minLength: 1, maxLength: 8 }),
    ),
    path: fc.oneof(
      fc.constantFrom('/v1/models', '/v1/voice/sessions', '*', 'http://x/v1/models', ''),
      fc.string({ unit: byte, maxLength: 20 }),
    ),
    version: fc.constantFrom('HTTP/1.1', 'HTTP/1.0', 'HTTP/2.0', 'HTTP/1.1 ', 'FOO'),
    headers: fc.array(fc.tuple(fc.string({ unit: byte, minLength: 1, maxLength: 12 }), fc.string({ unit: byte, maxLength: 30 })), {
      maxLength: 4,
    }),
    big: fc.option(fc.integer({ min: 16_000, max: 40_000 }), { freq: 5 }),
    framing: fc.constantFrom('none', 'cl', 'te', 'te+cl', 'bad-cl'),
  });
  await fc.assert(
    fc.asyncProperty(request, async (r) => {
      const head = [`${r.method} ${r.path} ${r.version}`, 'Host: fuzz.test'];
      for (const [name, value] of r.headers) head.push(`${name.replace(/[\r\n]/g, '')}: ${value.replace(/[\r\n]/g, '')}`);
      if (r.big !== null) head.push(`X-Big: ${'b'.repeat(r.big)}`);
      if (r.framing === 'cl' || r.framing === 'te+cl') head.push('Content-Length: 2');
      if (r.framing === 'te' || r.framing === 'te+cl') head.push('Transfer-Encoding: chunked');
      if (r.framing === 'bad-cl') head.push('Content-Length: -1');
      head.push('Connection: close');
      const body = r.framing === 'te' || r.framing === 'te+cl' ? '2\r\n{}\r\n0\r\n\r\n' : r.framing === 'cl' ? '{}' : '';
      const res = await rawRequest(h.url, Buffer.from(`${head.join('\r\n')}\r\n\r\n${body}`, 'latin1'), { head: r.method === 'HEAD' });
      const problem = checkAnswer(res, r.method === 'HEAD' ? 'HEAD' : 'X', `${JSON.stringify(r.method)} ${JSON.stringify(r.path)}`);
      if (problem) throw new Error(problem);
    }),
    { numRuns: RUNS * 2 },
  );
  t.equal((await api(h, 'GET', '/healthz')).status, 200, 'still serving');
  t.notOk(
    h.logLines.some((l) => l.includes('"request failed"')),
    'no request failed',
  );
});

async function checkStillHealthy(t: Test, h: Awaited<ReturnType<typeof startControlPlane>>, f: Fixture) {
  t.equal((await api(h, 'GET', '/healthz')).status, 200, 'still serving');
  const created = await createSession(h, f.otherKey);
  t.equal(created.status, 201, 'and still creating sessions');
  t.ok(VoiceSession.safeParse(created.body).success);
  t.same(await checkLedgerInvariants(h.db.pool), [], 'ledger invariants hold');
  t.notOk(
    h.logLines.some((l) => l.includes('"request failed"')),
    'no request failed (no 5xx)',
  );
}
