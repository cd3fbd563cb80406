// Issue 13: the express and HTTP instrumentations are off; each request still gets one server span, made by the
// server (tracedRequests), named after its route (`POST /v1/voice/sessions`, never the path itself), and the HTTP
// duration metric keeps its `http.route` label. Starts the SDK globally (as main.ts does): keep this file to itself.
import { createRequire } from 'node:module';
import t, { type Test } from 'tap';
import { startTelemetry, type Telemetry } from '@s2s/telemetry';
import { adminHeaders, api, bearer, createKey, createSession, durationCount, startControlPlane } from './helpers.js';

interface FinishedSpan {
  name: string;
  kind: number;
  attributes: Record<string, unknown>;
  instrumentationScope: { name: string };
}

const finished: FinishedSpan[] = [];
const telemetry: Telemetry = startTelemetry({
  serviceName: 'control-plane',
  env: {},
  ownHttpServerSpans: true,
  spanProcessor: {
    onStart: () => {},
    onEnd: (span) => void finished.push(span),
    forceFlush: async () => {},
    shutdown: async () => {},
  },
});
t.teardown(() => telemetry.shutdown());
// Required after the SDK started, so the HTTP instrumentation patches node:http's server (the services get
// this from `--import @s2s/telemetry/register`).
createRequire(import.meta.url)('node:http');

/** The one server span of `method` on `path` (its url.path) that answered `status`, checked unique. */
function serverSpan(t: Test, method: string, path: string, status: number): FinishedSpan | undefined {
  const spans = finished.filter(
    (s) =>
      s.kind === 1 &&
      s.attributes['url.path'] === path &&
      s.attributes['http.request.method'] === method &&
      s.attributes['http.response.status_code'] === status,
  );
  t.equal(spans.length, 1, `one server span for ${method} ${path} (${status})`);
  return spans[0];
}

t.test('one server span per request, named after the route express dispatched it to', async (t) => {
  const h = await startControlPlane(t);
  const key = await createKey(h, 100_000);
  finished.length = 0;

  const created = await createSession(h, key.key);
  t.equal(created.status, 201);
  const id = (created.body as { id: string }).id;
  t.equal((await api(h, 'GET', `/v1/voice/sessions/${id}`, { headers: bearer(key.key) })).status, 200);
  t.equal((await createSession(h, 'vr_sk_' + 'x'.repeat(40))).status, 401, 'a refused create');
  t.equal((await api(h, 'GET', '/v1/models')).status, 200, 'the catalog, from memory');
  t.equal((await api(h, 'GET', `/admin/v1/keys/${key.id}`, { headers: adminHeaders })).status, 200);
  t.equal((await api(h, 'POST', '/v1/voice/sessions/vs_unknown/end', { headers: bearer(key.key) })).status, 404, 'a route further down');
  t.equal((await api(h, 'GET', '/v1/nothing/here')).status, 404, 'no route');

  const expected: [string, string, string | undefined, number][] = [
    ['POST', '/v1/voice/sessions', '/v1/voice/sessions', 201],
    ['POST', '/v1/voice/sessions', '/v1/voice/sessions', 401],
    ['GET', `/v1/voice/sessions/${id}`, '/v1/voice/sessions/:id', 200],
    ['GET', '/v1/models', '/v1/models', 200],
    ['GET', `/admin/v1/keys/${key.id}`, '/admin/v1/keys/:id', 200],
    ['POST', '/v1/voice/sessions/vs_unknown/end', '/v1/voice/sessions/:id/end', 404],
    ['GET', '/v1/nothing/here', undefined, 404],
  ];
  for (const [method, path, route, status] of expected) {
    const span = serverSpan(t, method, path, status);
    t.equal(span?.attributes['http.route'], route, `http.route of ${method} ${path} (${status})`);
    t.equal(span?.name, route === undefined ? method : `${method} ${route}`, `name of the span of ${method} ${path} (${status})`);
  }
  const create = serverSpan(t, 'POST', '/v1/voice/sessions', 201);
  t.equal(create?.attributes['s2s.session.id'], id, 'the route describes the session on the server span');
  t.notOk(
    finished.some((s) => s.instrumentationScope.name.includes('express')),
    'no express middleware spans',
  );

  const page = await telemetry.metrics.scrape();
  t.equal(durationCount(page, '/v1/voice/sessions', 201), 1, 'the duration metric by route and status');
  t.equal(durationCount(page, '/v1/voice/sessions', 401), 1);
  t.equal(durationCount(page, '/v1/voice/sessions/:id', 200), 1);
  t.equal(durationCount(page, '/v1/models', 200), 1);
});
