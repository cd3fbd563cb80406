// Starts the SDK globally: keep this file to itself (tap runs each file in its own process).
import { createServer, type IncomingMessage } from 'node:http';
import { createRequire } from 'node:module';
import type { AddressInfo } from 'node:net';
import t from 'tap';
import { HTTP_METRICS, PROMETHEUS_CONTENT_TYPE, RELAY_METRICS, createInstrument, prometheusName, startTelemetry } from '../src/index.js';

interface Received {
  path: string;
  contentType: string | undefined;
  body: string;
}

async function listen(handler: (req: IncomingMessage, res: import('node:http').ServerResponse) => void) {
  const server = createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return { port, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

t.test('instruments made through telemetry.metrics appear on /metrics and go out over OTLP', async (t) => {
  const received: Received[] = [];
  const collector = await listen((req, res) => {
    let body = '';
    req.on('data', (c) => (body += String(c)));
    req.on('end', () => {
      received.push({ path: req.url ?? '', contentType: req.headers['content-type'], body });
      res.setHeader('content-type', 'application/json');
      res.end('{}');
    });
  });
  t.teardown(collector.close);

  const telemetry = startTelemetry({
    serviceName: 'metrics-test',
    env: {
      // Metrics only: no span goes to the collector, so every request it gets is a metrics export.
      OTEL_EXPORTER_OTLP_METRICS_ENDPOINT: `http://127.0.0.1:${collector.port}/v1/metrics`,
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      OTEL_METRIC_EXPORT_INTERVAL: '600000',
    },
    instrumentations: ['http'],
  });
  let stopped = false;
  t.teardown(() => (stopped ? undefined : telemetry.shutdown()));

  // Loaded after the SDK started, through require, so the http instrumentation patches it.
  const http = createRequire(import.meta.url)('node:http') as typeof import('node:http');
  const service = http.createServer((req, res) => {
    if (req.url === '/metrics') return telemetry.metrics.handler(req, res);
    res.end('ok');
  });
  await new Promise<void>((resolve) => service.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => service.close(() => resolve())));
  const base = `http://127.0.0.1:${(service.address() as AddressInfo).port}`;

  const attaches = createInstrument(telemetry.metrics.meter, RELAY_METRICS.attaches);
  const active = createInstrument(telemetry.metrics.meter, RELAY_METRICS.activeSessions);
  const ttfa = createInstrument(telemetry.metrics.meter, RELAY_METRICS.timeToFirstAudio);
  attaches.add(1);
  attaches.add(1, { 'error.type': 'session_ended' });
  active.add(3);
  active.add(-1);
  ttfa.record(0.042, { 'gen_ai.provider.name': 'local' });
  await (await fetch(`${base}/v1/ping`)).text();

  const res = await fetch(`${base}/metrics`);
  t.equal(res.status, 200);
  t.equal(res.headers.get('content-type'), PROMETHEUS_CONTENT_TYPE);
  const text = await res.text();
  t.equal(prometheusName(RELAY_METRICS.attaches), 's2s_relay_attaches_total');
  t.match(text, /^s2s_relay_attaches_total\{otel_scope_name="s2s\.metrics-test"\} 1$/m, 'counter, success');
  t.match(text, /^s2s_relay_attaches_total\{error_type="session_ended",otel_scope_name="s2s\.metrics-test"\} 1$/m);
  t.match(text, /^s2s_relay_active_sessions\{otel_scope_name="s2s\.metrics-test"\} 2$/m, 'up-down counter');
  t.match(text, /^s2s_relay_time_to_first_audio_bucket\{gen_ai_provider_name="local",[^}]*le="0\.05"\} 1$/m, 'buckets');
  t.match(text, /^s2s_relay_time_to_first_audio_bucket\{gen_ai_provider_name="local",[^}]*le="0\.025"\} 0$/m);
  t.match(
    text,
    new RegExp(`^${prometheusName(HTTP_METRICS.serverRequestDuration)}_count\\{[^}]*http_response_status_code="200"`, 'm'),
    'HTTP instrumentation',
  );
  t.match(text, /^target_info\{[^}]*service_name="metrics-test"/m, 'resource');
  const again = await (await fetch(`${base}/metrics`)).text();
  t.match(again, /^http_server_request_duration_count\{[^}]*\} 1$/m, 'scrapes are not counted as requests');

  await telemetry.shutdown(); // the periodic reader exports once more on shutdown
  stopped = true;
  const exports = received.filter((r) => r.path === '/v1/metrics');
  t.ok(exports.length >= 1, 'metrics exported over OTLP');
  t.equal(exports[0]?.contentType, 'application/json', 'OTEL_EXPORTER_OTLP_PROTOCOL=http/json');
  t.match(exports.at(-1)?.body, 's2s.relay.attaches');
  t.match(exports.at(-1)?.body, 'metrics-test');
});
