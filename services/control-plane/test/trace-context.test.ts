// Issue 13: with no trace exporter the control plane's requests run outside any active context (tracedRequests
// keeps the server span on the request). The trace still comes in and goes out: a caller's traceparent becomes
// the session's trace, the access line and the failure line carry the request's trace and span ids, and the
// duration metric counts requests by route. Starts the SDK globally (as main.ts does): keep this file to itself.
import t from 'tap';
import { startTelemetry, type Telemetry } from '@s2s/telemetry';
import { api, createKey, createSession, durationCount, startControlPlane, type Harness } from './helpers.js';

// No exporter, no span processor: spans get ids but are not recorded (the shipped default without OTLP).
const telemetry: Telemetry = startTelemetry({ serviceName: 'control-plane', env: {}, ownHttpServerSpans: true });
t.teardown(() => telemetry.shutdown());

const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';
const PARENT_SPAN_ID = '00f067aa0ba902b7';

function logLines(h: Harness): Record<string, unknown>[] {
  return h.logLines.map((l) => JSON.parse(l) as Record<string, unknown>);
}

function accessLine(h: Harness, requestId: string | null): Record<string, unknown> | undefined {
  return logLines(h).find((l) => l.msg === 'request completed' && l.request_id === requestId);
}

t.test("a caller's traceparent is the session's trace; the access line carries the request's ids", async (t) => {
  const h = await startControlPlane(t);
  const key = await createKey(h, 100_000);

  const traced = await api(h, 'POST', '/v1/voice/sessions', {
    headers: { authorization: `Bearer ${key.key}`, traceparent: `00-${TRACE_ID}-${PARENT_SPAN_ID}-01` },
    json: { model: 'local/echo-1', mode: 'speech_to_speech' },
  });
  t.equal(traced.status, 201);
  t.equal(traced.body.trace_id, TRACE_ID, "the session is in the caller's trace");
  const tracedLine = accessLine(h, traced.headers.get('x-request-id'));
  t.equal(tracedLine?.trace_id, TRACE_ID, 'the access line carries the trace id');
  t.match(tracedLine?.span_id, /^[0-9a-f]{16}$/, 'and a span id');
  t.not(tracedLine?.span_id, PARENT_SPAN_ID, "the server span's own, a child of the caller's");

  const fresh = await createSession(h, key.key);
  t.equal(fresh.status, 201);
  t.match(fresh.body.trace_id, /^[0-9a-f]{32}$/);
  t.not(fresh.body.trace_id, TRACE_ID, 'no traceparent: a trace of its own');
  t.equal(accessLine(h, fresh.headers.get('x-request-id'))?.trace_id, fresh.body.trace_id, 'the same trace in the log');

  const models = await api(h, 'GET', '/v1/models', { headers: { traceparent: `00-${TRACE_ID}-${PARENT_SPAN_ID}-00` } });
  t.equal(models.status, 200);
  t.equal(accessLine(h, models.headers.get('x-request-id'))?.trace_id, TRACE_ID, 'the catalog fast path too');

  const page = await telemetry.metrics.scrape();
  t.equal(durationCount(page, '/v1/voice/sessions', 201), 2, 'creates by route and status');
  t.equal(durationCount(page, '/v1/models', 200), 1);
  t.equal(durationCount(page, '/admin/v1/keys', 201), 1);
  await api(h, 'GET', '/metrics');
  await api(h, 'GET', '/healthz');
  const again = await telemetry.metrics.scrape();
  t.notMatch(again, /http_route="\/(metrics|healthz)"/, 'scrapes and probes are not counted');
  t.notOk(
    logLines(h).some((l) => l.msg === 'request completed' && l.trace_id !== undefined && typeof l.trace_id !== 'string'),
    'ids are strings',
  );
});

t.test("a failed request's error line carries its request and trace ids", async (t) => {
  const h = await startControlPlane(t);
  await h.db.pool.query('ALTER TABLE rate_snapshots RENAME TO rate_snapshots_gone');
  const res = await api(h, 'GET', '/v1/models', { headers: { traceparent: `00-${TRACE_ID}-${PARENT_SPAN_ID}-01` } });
  t.equal(res.status, 500);
  const failed = logLines(h).find((l) => l.msg === 'request failed');
  t.equal(failed?.request_id, res.body.error.request_id);
  t.equal(failed?.trace_id, TRACE_ID, 'the trace id');
  t.equal(failed?.span_id, accessLine(h, res.body.error.request_id)?.span_id, 'the span id of its access line');
  const page = await telemetry.metrics.scrape();
  const failedSeries = page
    .split('\n')
    .filter((l) => l.startsWith('http_server_request_duration_count{') && l.includes('http_response_status_code="500"'));
  t.equal(failedSeries.length, 1, 'the 5xx counted');
  t.match(failedSeries[0], /error_type="500"/, 'with its error.type');
  t.match(failedSeries[0], /http_route="\/v1\/models"/, 'and its route');
});
