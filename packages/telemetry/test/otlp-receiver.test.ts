// Starts the SDK globally: keep this file to itself (tap runs each file in its own process).
import t from 'tap';
import { trace } from '@opentelemetry/api';
import { startTelemetry, traceHeaders, withExtractedContext } from '../src/index.js';
import { startOtlpReceiver } from '../src/testing.js';

t.test('the test receiver decodes what the SDK sends over http/json: tree, attributes, links, events', async (t) => {
  const receiver = await startOtlpReceiver();
  t.teardown(receiver.close);
  const telemetry = startTelemetry({
    serviceName: 'receiver-test',
    env: { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json', OTEL_METRICS_EXPORTER: 'none' },
    instrumentations: [],
  });
  const tracer = trace.getTracer('test');
  const headers = tracer.startActiveSpan('session.create', (span) => {
    span.setAttributes({ 's2s.session_id': 'vs_1', 's2s.reserved_cents': 42, 'url.path': '/v1/voice/sessions/x_vr_sk_abc' });
    span.addEvent('first_audio', { 's2s.ttfa_ms': 120 });
    const h = traceHeaders();
    span.end();
    return h;
  });
  withExtractedContext(headers, () =>
    tracer.startActiveSpan('settle', { links: [{ context: trace.getActiveSpan()!.spanContext() }] }, (s) => s.end()),
  );
  await telemetry.shutdown();

  const spans = receiver.spans();
  const create = spans.find((s) => s.name === 'session.create');
  const settle = spans.find((s) => s.name === 'settle');
  t.ok(create && settle);
  t.equal(create?.serviceName, 'receiver-test');
  t.match(create?.traceId, /^[0-9a-f]{32}$/);
  t.same(
    { id: create?.attributes['s2s.session_id'], cents: create?.attributes['s2s.reserved_cents'], path: create?.attributes['url.path'] },
    { id: 'vs_1', cents: 42, path: '/v1/voice/sessions/x_vr_sk_[REDACTED]' },
  );
  t.same(create?.events, [{ name: 'first_audio', attributes: { 's2s.ttfa_ms': 120 } }]);
  t.equal(settle?.traceId, create?.traceId, 'the consumer joins the producer trace');
  t.equal(settle?.parentSpanId, create?.spanId);
  t.equal(settle?.links[0]?.spanId, create?.spanId);
  t.notMatch(receiver.rawBodies().join(''), 'vr_sk_abc');
});
