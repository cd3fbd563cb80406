import { PassThrough } from 'node:stream';
import t from 'tap';
import { AppError, errors, INTERNAL_MESSAGE } from '@s2s/core';
import { httpErrorAnswer, httpStatus, isServerError, newRequestId, pathOf, toAppError, writeRawError } from '../src/index.js';

/** The server's own classifier (the control plane and the relay pass @s2s/db's isStoreUnavailableError). */
const isStoreOutage = (err: unknown) => (err as { code?: unknown }).code === 'ECONNREFUSED';

t.test('codes map to their status, error.type and headers', async (t) => {
  const a = httpErrorAnswer(errors.invalidKey(), 'req_1');
  t.same(
    [a.status, a.body.error.type, a.body.error.code, a.body.error.request_id],
    [401, 'authentication_error', 'invalid_vr_sk', 'req_1'],
  );
  t.equal(a.headers['WWW-Authenticate'], 'Bearer');
  const down = httpErrorAnswer(errors.sessionStoreUnavailable(), 'req_2');
  t.same([down.status, down.body.error.type, down.headers['Retry-After']], [503, 'service_unavailable_error', '1']);
  t.same([httpStatus('insufficient_wallet_balance'), httpStatus('session_expired'), httpStatus('idempotency_conflict')], [402, 410, 409]);
});

t.test('unexpected errors answer the generic message; the detail stays in the cause', async (t) => {
  const boom = new Error('secret detail');
  const err = toAppError(boom, isStoreOutage);
  t.equal(err.code, 'internal_error');
  t.equal(err.cause, boom);
  t.equal(err.retryable, false);
  t.ok(isServerError(err));
  t.equal(httpErrorAnswer(err, 'req_3').body.error.message, INTERNAL_MESSAGE);
  t.equal(httpErrorAnswer(new AppError('internal_error', 'details'), 'req_4').body.error.message, INTERNAL_MESSAGE);
});

t.test('a store outage is 503 with the code the route names, and retryable', async (t) => {
  const refused = Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });
  t.match(toAppError(refused, isStoreOutage), { code: 'service_unavailable', retryable: true });
  t.match(toAppError(refused, isStoreOutage, 'session_store_unavailable'), { code: 'session_store_unavailable', retryable: true });
  t.match(toAppError(Object.assign(new Error('too large'), { status: 413 }), isStoreOutage), { code: 'invalid_request', retryable: false });
  t.match(newRequestId(), /^req_[0-9a-f]{32}$/);
});

t.test('a refusal before an upgrade is a whole HTTP/1.1 answer on the raw socket, then the socket closes', async (t) => {
  const socket = new PassThrough();
  const chunks: Buffer[] = [];
  socket.on('data', (c: Buffer) => chunks.push(c));
  const ended = new Promise((resolve) => socket.on('end', resolve));
  writeRawError(socket, errors.serviceUnavailable(undefined, 'No relay answered.'), 'req_9');
  await ended;
  const [head, body] = Buffer.concat(chunks).toString().split('\r\n\r\n');
  const lines = head!.split('\r\n');
  t.equal(lines[0], 'HTTP/1.1 503 Service Unavailable');
  t.ok(lines.includes('Connection: close') && lines.includes('X-Request-Id: req_9') && lines.includes('Retry-After: 1'));
  t.ok(lines.includes(`Content-Length: ${Buffer.byteLength(body!)}`));
  t.same(JSON.parse(body!), {
    error: { type: 'service_unavailable_error', code: 'service_unavailable', message: 'No relay answered.', request_id: 'req_9' },
  });

  const parser = new PassThrough();
  const out: Buffer[] = [];
  parser.on('data', (c: Buffer) => out.push(c));
  const done = new Promise((resolve) => parser.on('end', resolve));
  writeRawError(parser, new AppError('request_header_fields_too_large', 'Headers too large.'), 'req_10');
  await done;
  t.match(Buffer.concat(out).toString(), /^HTTP\/1\.1 431 Request Header Fields Too Large\r\n/, 'a parser refusal keeps its own status');

  const gone = new PassThrough();
  gone.end();
  gone.resume();
  await new Promise((resolve) => gone.on('finish', resolve));
  writeRawError(gone, errors.notFound(), 'req_11');
  t.ok(gone.destroyed, 'a socket that can no longer be written is destroyed');
});

t.test('pathOf: the path of a request target without its query', async (t) => {
  t.same(
    [pathOf('/v1/realtime?session_id=s'), pathOf('/v1/realtime'), pathOf(undefined), pathOf('/a?b?c')],
    ['/v1/realtime', '/v1/realtime', '/', '/a'],
  );
});
