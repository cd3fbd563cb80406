// Starts the SDK globally: keep this file to itself (tap runs each file in its own process).
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import t from 'tap';
import { trace } from '@opentelemetry/api';
import { startTelemetry } from '../src/index.js';

interface Received {
  path: string;
  headers: IncomingMessage['headers'];
  body: string;
}

t.test('OTEL_EXPORTER_OTLP_ENDPOINT sends redacted spans to <endpoint>/v1/traces', async (t) => {
  const received: Received[] = [];
  const collector = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += String(c)));
    req.on('end', () => {
      received.push({ path: req.url ?? '', headers: req.headers, body });
      res.setHeader('content-type', 'application/json');
      res.end('{}');
    });
  });
  await new Promise<void>((resolve) => collector.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => collector.close(() => resolve())));
  const { port } = collector.address() as AddressInfo;

  // instrumentations: [] so the collector's own requests are not traced.
  const telemetry = startTelemetry({
    serviceName: 'otlp-test',
    env: {
      OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${port}/`,
      OTEL_EXPORTER_OTLP_HEADERS: 'x-collector-tenant=s2s',
      OTEL_RESOURCE_ATTRIBUTES: 'deployment.environment.name=ci-check',
    },
    instrumentations: [],
  });
  trace.getTracer('test').startActiveSpan('session.create', (span) => {
    span.setAttribute('s2s.session_id', 'vs_exported');
    span.setAttribute('note', 'Bearer vr_sk_mustnotleave');
    span.end();
  });
  await telemetry.shutdown(); // flushes the batch processor

  t.equal(received.length, 1);
  t.equal(received[0]?.path, '/v1/traces');
  t.equal(received[0]?.headers['x-collector-tenant'], 's2s');
  t.match(received[0]?.body, 'vs_exported');
  t.match(received[0]?.body, 'otlp-test', 'service.name is exported');
  t.match(received[0]?.body, 'ci-check', 'OTEL_RESOURCE_ATTRIBUTES from the passed env');
  t.notMatch(received[0]?.body, 'mustnotleave');
});
