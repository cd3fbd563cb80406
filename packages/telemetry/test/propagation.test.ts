// Starts the SDK globally: keep this file to itself (tap runs each file in its own process).
import t from 'tap';
import { trace } from '@opentelemetry/api';
import { InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { activeTraceId, startTelemetry, traceHeaders, withExtractedContext } from '../src/index.js';

t.test('before start: no active trace, empty headers', async (t) => {
  t.same(traceHeaders(), {});
  t.equal(activeTraceId(), undefined);
  t.equal(
    withExtractedContext({}, () => activeTraceId()),
    undefined,
  );
});

t.test('a trace id survives a round trip through a plain header map', async (t) => {
  // A recording processor, so that parent/child links are visible on the spans.
  const telemetry = startTelemetry({
    serviceName: 'propagation-test',
    env: {},
    instrumentations: [],
    spanProcessor: new SimpleSpanProcessor(new InMemorySpanExporter()),
  });
  t.teardown(() => telemetry.shutdown());
  const tracer = trace.getTracer('test');

  const { headers, traceId, spanId } = tracer.startActiveSpan('publish', (span) => {
    const out = { headers: traceHeaders(), traceId: activeTraceId(), spanId: span.spanContext().spanId };
    span.end();
    return out;
  });
  t.match(traceId, /^[0-9a-f]{32}$/);
  t.equal(headers.traceparent, `00-${traceId}-${spanId}-01`);
  t.equal(activeTraceId(), undefined, 'nothing active outside the span');

  const consumed = withExtractedContext(headers, () =>
    tracer.startActiveSpan('consume', (span) => {
      const out = { traceId: activeTraceId(), parent: (span as unknown as ReadableSpan).parentSpanContext?.spanId };
      span.end();
      return out;
    }),
  );
  t.equal(consumed.traceId, traceId, 'consumer span joins the producer trace');
  t.equal(consumed.parent, spanId, 'consumer span is a child of the producer span');

  t.equal(
    withExtractedContext({ traceparent: ['00-' + traceId + '-' + spanId + '-01'] as unknown as string }, activeTraceId),
    traceId,
    'array-valued headers are accepted',
  );
  t.equal(withExtractedContext({ traceparent: 'garbage' }, activeTraceId), undefined, 'malformed header: fresh root');
  t.equal(withExtractedContext(undefined, activeTraceId), undefined);
});

t.test('start twice is refused; after shutdown it can start again', async (t) => {
  const first = startTelemetry({ serviceName: 'a', env: {}, instrumentations: [] });
  t.throws(() => startTelemetry({ serviceName: 'b', env: {}, instrumentations: [] }));
  await first.shutdown();
  await first.shutdown();
  const second = startTelemetry({ serviceName: 'c', env: {}, instrumentations: [] });
  t.ok(tracerWorks());
  await second.shutdown();
});

t.test('OTEL_SDK_DISABLED=true starts nothing', async (t) => {
  const telemetry = startTelemetry({ serviceName: 'off', env: { OTEL_SDK_DISABLED: 'true' }, instrumentations: [] });
  t.notOk(tracerWorks(), 'spans are no-ops');
  t.same(
    trace.getTracer('x').startActiveSpan('s', (s) => (s.end(), traceHeaders())),
    {},
  );
  await telemetry.shutdown();
});

function tracerWorks(): boolean {
  return trace.getTracer('x').startActiveSpan('s', (span) => {
    span.end();
    return span.isRecording() || trace.isSpanContextValid(span.spanContext());
  });
}
