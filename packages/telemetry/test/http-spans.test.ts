// Starts the SDK globally: keep this file to itself (tap runs each file in its own process).
import { createRequire } from 'node:module';
import type { AddressInfo } from 'node:net';
import t from 'tap';
import { trace } from '@opentelemetry/api';
import { InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { startTelemetry } from '../src/index.js';

const exporter = new InMemorySpanExporter();
const telemetry = startTelemetry({
  serviceName: 'telemetry-test',
  env: {},
  instrumentations: ['http'],
  spanProcessor: new SimpleSpanProcessor(exporter),
});
t.teardown(() => telemetry.shutdown());

// Loaded after the SDK started, through require, so the http instrumentation patches it without the
// ESM loader hook (esm-register.test.ts covers the hook).
const http = createRequire(import.meta.url)('node:http') as typeof import('node:http');

const SECRET = 'vr_sk_abcdefghijklmnopqrstuvwxyz0123456789ABCD';
const QUERY_SECRET = 'q5ecretQueryValue';

function everything(): string {
  return JSON.stringify(
    exporter.getFinishedSpans().map((s) => ({
      name: s.name,
      attributes: s.attributes,
      events: s.events,
      links: s.links,
      status: s.status,
    })),
  );
}

async function listen(handler: import('node:http').RequestListener): Promise<{ url: string; close: () => Promise<void> }> {
  const server = http.createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

function get(url: string, headers: Record<string, string>): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = http.get(url, { headers }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject);
  });
}

t.test('an incoming request produces a server span without its credentials', async (t) => {
  exporter.reset();
  const server = await listen((_req, res) => res.end('ok'));
  t.teardown(server.close);

  const status = await get(`${server.url}/v1/realtime?session_id=vs_abc&api_key=${QUERY_SECRET}&token=${QUERY_SECRET}`, {
    authorization: `Bearer ${SECRET}`,
    'x-api-key': SECRET,
    cookie: `sid=${QUERY_SECRET}`,
  });
  t.equal(status, 200);

  const spans = exporter.getFinishedSpans();
  const serverSpan = spans.find((s) => s.instrumentationScope.name.includes('http') && s.kind === 1);
  t.ok(serverSpan, 'server span recorded');
  t.equal(serverSpan?.attributes['http.response.status_code'], 200);
  t.ok(
    spans.some((s) => s.kind === 2),
    'client span recorded',
  );

  const all = everything();
  t.notMatch(all, SECRET);
  t.notMatch(all, 'vr_sk_abc');
  t.notMatch(all, QUERY_SECRET);
  t.notMatch(all, /Bearer\s+[^\s[]/);
  t.match(all, 'session_id=vs_abc', 'session ids are not secrets');
  t.notOk(Object.keys(serverSpan?.attributes ?? {}).some((k) => /authorization|cookie|api.key/i.test(k)));
});

t.test('health probes are not traced', async (t) => {
  exporter.reset();
  const server = await listen((_req, res) => res.end('ok'));
  t.teardown(server.close);
  await get(`${server.url}/healthz`, {});
  await get(`${server.url}/readyz`, {});
  t.notOk(
    exporter.getFinishedSpans().some((s) => s.kind === 1),
    'no server span for probes',
  );
});

t.test('hand-made attributes are scrubbed before any processor sees them', async (t) => {
  exporter.reset();
  const tracer = trace.getTracer('test');
  tracer.startActiveSpan(`attach ${SECRET}`, (span) => {
    span.setAttributes({
      'http.request.header.authorization': [`Bearer ${SECRET}`],
      'provider.api_key': 'sk-proj-abcdefghijklmnopqrstuvwxyz',
      'session.audio': 'AAAAAAAAAAAA',
      's2s.audio_in_ms': 1200,
      'gen_ai.usage.input_tokens': 42,
      'upstream.url': `wss://example.test/v1/realtime?model=m&key=${QUERY_SECRET}`,
      'error.detail': `upstream said: Bearer ${SECRET}`,
      'goog.url': 'https://example.test/?x=AIzaSyA1234567890abcdefghijklmnopqrstuv',
    });
    span.addEvent('retry', { reason: `token ${SECRET}`, 'auth.token': 'abc' });
    span.setStatus({ code: 2, message: `failed with Bearer ${SECRET}` });
    span.end();
  });

  const [span] = exporter.getFinishedSpans();
  t.ok(span);
  if (!span) return;
  t.equal(span.name, 'attach vr_sk_[REDACTED]');
  t.same(Object.keys(span.attributes).sort(), ['error.detail', 'gen_ai.usage.input_tokens', 'goog.url', 's2s.audio_in_ms', 'upstream.url']);
  t.equal(span.attributes['s2s.audio_in_ms'], 1200, 'numeric counters survive');
  t.equal(span.attributes['error.detail'], 'upstream said: Bearer [REDACTED]');
  t.equal(span.attributes['upstream.url'], 'wss://example.test/v1/realtime?model=m&key=[REDACTED]');
  t.same(span.events[0]?.attributes, { reason: 'token vr_sk_[REDACTED]' });
  t.equal(span.status.message, 'failed with Bearer [REDACTED]');
  const all = everything();
  for (const secret of [SECRET, QUERY_SECRET, 'sk-proj-abc', 'AAAAAAAAAAAA', 'AIzaSy']) t.notMatch(all, secret);
});

t.test('a key glued into a path is removed from the server span (url.path, url.full, name)', async (t) => {
  exporter.reset();
  const server = await listen((_req, res) => res.end('ok'));
  t.teardown(server.close);
  const ek = 'ek_0123456789abcdefghijABCDEFGHIJ012345';
  await get(`${server.url}/v1/voice/sessions/vs_x_${SECRET}?note=x_${ek}`, {});
  const serverSpan = exporter.getFinishedSpans().find((s) => s.kind === 1);
  t.ok(serverSpan, 'server span recorded');
  t.equal(serverSpan?.attributes['url.path'], '/v1/voice/sessions/vs_x_vr_sk_[REDACTED]');
  t.equal(serverSpan?.attributes['url.query'], 'note=x_ek_[REDACTED]');
  const all = everything();
  t.notMatch(all, SECRET);
  t.notMatch(all, 'abcdefghijklmnopqrstuvwxyz0123456789');
  t.notMatch(all, ek);
});

t.test('hand-made spans: glued keys and client secrets in names, attributes and events', async (t) => {
  exporter.reset();
  const ek = 'ek_0123456789abcdefghijABCDEFGHIJ012345';
  trace.getTracer('test').startActiveSpan(`GET /v1/voice/sessions/vs_x_${SECRET}`, (span) => {
    span.setAttributes({ 'url.path': `/v1/voice/sessions/vs_x_${SECRET}`, 'ws.protocol': `svc-realtime-v1.auth.${ek}` });
    span.addEvent('refused', { detail: `offered x_${ek}` });
    span.end();
  });
  const [span] = exporter.getFinishedSpans();
  t.equal(span?.name, 'GET /v1/voice/sessions/vs_x_vr_sk_[REDACTED]');
  t.equal(span?.attributes['url.path'], '/v1/voice/sessions/vs_x_vr_sk_[REDACTED]');
  t.equal(span?.attributes['ws.protocol'], 'svc-realtime-v1.auth.ek_[REDACTED]');
  t.same(span?.events[0]?.attributes, { detail: 'offered x_ek_[REDACTED]' });
  const all = everything();
  t.notMatch(all, SECRET);
  t.notMatch(all, ek);
});

t.test('spans carry real trace ids even with no exporter configured', async (t) => {
  await trace.getTracer('test').startActiveSpan('op', async (span) => {
    t.ok(trace.isSpanContextValid(span.spanContext()));
    t.ok(span.isRecording());
    span.end();
  });
});
