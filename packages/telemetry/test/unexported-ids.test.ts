// Starts the SDK globally: keep this file to itself (tap runs each file in its own process).
import t from 'tap';
import { trace } from '@opentelemetry/api';
import { activeTraceId, startTelemetry, traceHeaders } from '../src/index.js';

t.test('with nothing to export, spans are not recorded but trace ids exist and propagate', async (t) => {
  const telemetry = startTelemetry({ serviceName: 'test', env: {}, instrumentations: [] });
  t.teardown(() => telemetry.shutdown());
  const tracer = trace.getTracer('test');
  const seen = [1, 2].map(() =>
    tracer.startActiveSpan('request', (span) => {
      const out = { traceId: activeTraceId(), recording: span.isRecording(), traceparent: traceHeaders().traceparent };
      span.end();
      return out;
    }),
  );
  for (const s of seen) {
    t.match(s.traceId, /^[0-9a-f]{32}$/);
    t.not(s.traceId, '0'.repeat(32));
    t.equal(s.recording, false, 'the span is not recorded');
    t.match(s.traceparent, new RegExp(`^00-${s.traceId}-[0-9a-f]{16}-00$`), 'the id propagates, marked unsampled');
  }
  t.not(seen[0]?.traceId, seen[1]?.traceId, 'each root its own trace');
});

t.test('with an exporter, OTEL_TRACES_SAMPLER_ARG samples a ratio', async (t) => {
  const telemetry = startTelemetry({
    serviceName: 'test',
    env: {
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:1',
      OTEL_TRACES_SAMPLER: 'parentbased_traceidratio',
      OTEL_TRACES_SAMPLER_ARG: '0',
    },
    instrumentations: [],
  });
  t.teardown(() => telemetry.shutdown());
  const recording = trace.getTracer('test').startActiveSpan('x', (span) => {
    const r = span.isRecording();
    span.end();
    return r;
  });
  t.equal(recording, false, 'ratio 0 records nothing');
});
