// Starts the SDK globally: keep this file to itself (tap runs each file in its own process).
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import t from 'tap';
import { trace } from '@opentelemetry/api';
import { startTelemetry } from '../src/index.js';

interface Received {
  path: string;
  contentType: string | undefined;
  tenant: string | string[] | undefined;
}

const received: Received[] = [];
const collector = createServer((req, res) => {
  req.resume();
  req.on('end', () => {
    received.push({ path: req.url ?? '', contentType: req.headers['content-type'], tenant: req.headers['x-tenant'] });
    res.end();
  });
});
await new Promise<void>((resolve) => collector.listen(0, '127.0.0.1', resolve));
t.teardown(() => new Promise<void>((resolve) => collector.close(() => resolve())));
const endpoint = `http://127.0.0.1:${(collector.address() as AddressInfo).port}`;

async function exportOneSpan(env: Record<string, string>): Promise<Received[]> {
  received.length = 0;
  const telemetry = startTelemetry({ serviceName: 'protocol-test', env, instrumentations: [] });
  trace.getTracer('test').startActiveSpan('op', (span) => span.end());
  await telemetry.shutdown();
  return [...received];
}

t.test('OTEL_EXPORTER_OTLP_PROTOCOL picks the encoding; http/protobuf by default', async (t) => {
  const base = { OTEL_EXPORTER_OTLP_ENDPOINT: endpoint, OTEL_METRICS_EXPORTER: 'none' };
  const [byDefault] = await exportOneSpan(base);
  t.equal(byDefault?.path, '/v1/traces');
  t.equal(byDefault?.contentType, 'application/x-protobuf');
  const [json] = await exportOneSpan({ ...base, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' });
  t.equal(json?.contentType, 'application/json');
  const [perSignal] = await exportOneSpan({
    ...base,
    OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
    OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/protobuf',
    OTEL_EXPORTER_OTLP_TRACES_HEADERS: 'x-tenant=t%201',
  });
  t.equal(perSignal?.contentType, 'application/x-protobuf', 'the per-signal variable wins');
  t.equal(perSignal?.tenant, 't 1', 'per-signal headers, URL-decoded');
});

t.test('the per-signal endpoint is used as given; OTEL_TRACES_EXPORTER=none exports nothing', async (t) => {
  const [got] = await exportOneSpan({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${endpoint}/custom/path`, OTEL_METRICS_EXPORTER: 'none' });
  t.equal(got?.path, '/custom/path');
  t.same(await exportOneSpan({ OTEL_EXPORTER_OTLP_ENDPOINT: endpoint, OTEL_TRACES_EXPORTER: 'none', OTEL_METRICS_EXPORTER: 'none' }), []);
});

t.test('OTEL_TRACES_SAMPLER is the SDK sampler: always_off records nothing even with an exporter', async (t) => {
  const got = await exportOneSpan({
    OTEL_EXPORTER_OTLP_ENDPOINT: endpoint,
    OTEL_METRICS_EXPORTER: 'none',
    OTEL_TRACES_SAMPLER: 'always_off',
  });
  t.same(got, []);
});

t.test('an explicit env leaves the process environment as it was', async (t) => {
  process.env.OTEL_SERVICE_NAME = 'from-process';
  t.teardown(() => void delete process.env.OTEL_SERVICE_NAME);
  await exportOneSpan({ OTEL_EXPORTER_OTLP_ENDPOINT: endpoint, OTEL_METRICS_EXPORTER: 'none' });
  t.equal(process.env.OTEL_SERVICE_NAME, 'from-process');
  t.equal(process.env.OTEL_EXPORTER_OTLP_ENDPOINT, undefined);
});
