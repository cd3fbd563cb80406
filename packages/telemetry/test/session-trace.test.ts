// Starts the SDK globally: keep this file to itself (tap runs each file in its own process).
import t from 'tap';
import { InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { ROOT_CONTEXT, context, trace } from '@opentelemetry/api';
import { gatewayTracer, inSessionSpan, sessionContext, sessionRootSpanId, startSessionSpan, startTelemetry } from '../src/index.js';

const TRACE = '0af7651916cd43dd8448eb211c80319c';

t.test('sessionContext: the session root, derived from the trace id; anything else is the root context', async (t) => {
  const sc = trace.getSpanContext(sessionContext(TRACE));
  t.equal(sc?.traceId, TRACE);
  t.equal(sc?.spanId, sessionRootSpanId(TRACE));
  t.match(sc?.spanId, /^[0-9a-f]{16}$/);
  t.equal(sc?.spanId, sessionRootSpanId(TRACE), 'the same in every process');
  t.not(sessionRootSpanId(TRACE), sessionRootSpanId('1'.repeat(32)));
  t.equal(sc?.isRemote, true);
  for (const bad of [undefined, null, '', 'xyz', '0'.repeat(32), TRACE.toUpperCase()])
    t.equal(sessionContext(bad), ROOT_CONTEXT, String(bad));
});

t.test('session spans: in the session trace, linked to the work that caused them, children inside it', async (t) => {
  const exporter = new InMemorySpanExporter();
  const telemetry = startTelemetry({
    serviceName: 'test',
    env: {},
    instrumentations: [],
    spanProcessor: new SimpleSpanProcessor(exporter),
  });
  t.teardown(() => telemetry.shutdown());
  const tracer = gatewayTracer('test');

  // Caused by a request of another trace: parent is the session root, with a link to the request.
  const request = tracer.startSpan('request');
  await context.with(trace.setSpan(context.active(), request), () =>
    inSessionSpan(tracer, 'end', TRACE, {}, async () => {
      // Inside the session's trace: a child of the active span, no link.
      const { span } = startSessionSpan(tracer, 'child', TRACE);
      span.end();
    }),
  );
  request.end();
  await t.rejects(inSessionSpan(tracer, 'failing', TRACE, {}, () => Promise.reject(Object.assign(new Error('x'), { code: 'store_down' }))));

  const spans = exporter.getFinishedSpans();
  const end = spans.find((s) => s.name === 'end');
  const child = spans.find((s) => s.name === 'child');
  const failing = spans.find((s) => s.name === 'failing');
  t.equal(end?.spanContext().traceId, TRACE);
  t.equal(end?.parentSpanContext?.spanId, sessionRootSpanId(TRACE));
  t.same(
    end?.links.map((l) => l.context.spanId),
    [request.spanContext().spanId],
    'linked to the request',
  );
  t.equal(child?.spanContext().traceId, TRACE);
  t.equal(child?.parentSpanContext?.spanId, end?.spanContext().spanId, 'a child of the active session span');
  t.same(child?.links, []);
  t.equal(failing?.attributes['error.type'], 'store_down');
  t.equal(failing?.status.code, 2);
});
