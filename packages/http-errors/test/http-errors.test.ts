import t from 'tap';
import { AppError, errors, INTERNAL_MESSAGE } from '@s2s/core';
import { httpErrorAnswer, httpStatus, isServerError, newRequestId, toAppError } from '../src/index.js';

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
  const err = toAppError(boom);
  t.equal(err.code, 'internal_error');
  t.equal(err.cause, boom);
  t.equal(err.retryable, false);
  t.ok(isServerError(err));
  t.equal(httpErrorAnswer(err, 'req_3').body.error.message, INTERNAL_MESSAGE);
  t.equal(httpErrorAnswer(new AppError('internal_error', 'details'), 'req_4').body.error.message, INTERNAL_MESSAGE);
});

t.test('a store outage is 503 with the code the route names, and retryable', async (t) => {
  const refused = Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });
  t.match(toAppError(refused), { code: 'service_unavailable', retryable: true });
  t.match(toAppError(refused, 'session_store_unavailable'), { code: 'session_store_unavailable', retryable: true });
  t.match(toAppError(Object.assign(new Error('too large'), { status: 413 })), { code: 'invalid_request', retryable: false });
  t.match(newRequestId(), /^req_[0-9a-f]{32}$/);
});
