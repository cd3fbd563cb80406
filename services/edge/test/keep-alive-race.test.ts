// The keep-alive race between the edge's pool and a backend's keepAliveTimeout (issue 24 item 7): a backend that
// closes an idle connection at the very moment the edge reuses it never turns a good request into a 503.
import { once } from 'node:events';
import http from 'node:http';
import net, { type AddressInfo } from 'node:net';
import t from 'tap';
import { createLogger } from '@s2s/telemetry';
import { createEdge } from '../src/edge.js';
import type { Teardown } from './helpers.js';

const logger = createLogger({ service: 'edge-test', level: 'silent' });

interface Seen {
  method: string;
  url: string;
  body: string;
}

/** How the backend drops a kept-alive connection the moment a second request arrives on it. */
type Drop = 'reset' | 'close' | 'answer-then-reset';

/**
 * A minimal HTTP/1.1 backend on raw sockets, so that the moment of the close is exact: it answers the first request
 * of each connection and keeps it alive; when bytes of another request arrive on that connection it behaves as if
 * its idle timer had fired just then and drops the connection without reading them (`reset`: RST; `close`: FIN).
 * `answer-then-reset` sends the first bytes of an answer and then resets: the request was read, so no replay.
 * `seen` lists the requests it processed; `drops` counts the connections it dropped on reuse.
 */
async function racingBackend(t: Teardown, drop: Drop): Promise<{ url: string; seen: Seen[]; drops: () => number }> {
  const seen: Seen[] = [];
  let drops = 0;
  const server = net.createServer((socket) => {
    let buffered = Buffer.alloc(0);
    let answered = 0;
    socket.on('error', () => {});
    socket.on('data', (chunk) => {
      if (answered > 0) {
        drops++;
        if (drop === 'close') socket.destroy();
        else if (drop === 'reset') socket.resetAndDestroy();
        else {
          socket.write('HTTP/1.1 20');
          setImmediate(() => socket.resetAndDestroy());
        }
        return;
      }
      buffered = Buffer.concat([buffered, chunk]);
      const end = buffered.indexOf('\r\n\r\n');
      if (end === -1) return;
      const head = buffered.subarray(0, end).toString('latin1').split('\r\n');
      const length = Number(/^content-length:\s*(\d+)$/im.exec(head.join('\n'))?.[1] ?? 0);
      if (buffered.length < end + 4 + length) return;
      const [method = '', url = ''] = head[0]!.split(' ');
      seen.push({ method, url, body: buffered.subarray(end + 4, end + 4 + length).toString() });
      answered++;
      const body = JSON.stringify({ n: seen.length });
      socket.write(
        `HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n` +
          `Connection: keep-alive\r\nKeep-Alive: timeout=5\r\n\r\n${body}`,
      );
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  t.teardown(() => server.close());
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen, drops: () => drops };
}

async function startEdge(t: Teardown, controlPlane: string): Promise<string> {
  const edge = createEdge({ controlPlane, relays: ['http://127.0.0.1:9'], logger });
  edge.server.listen(0, '127.0.0.1');
  await once(edge.server, 'listening');
  t.teardown(() => edge.close());
  return `http://127.0.0.1:${(edge.server.address() as AddressInfo).port}`;
}

/** One request on a connection of its own (the client side plays no part in the race). */
function request(url: string, method: string, body?: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method, agent: false, headers: body === undefined ? {} : { 'content-type': 'application/json' } });
    req.on('error', reject);
    req.on('response', (res) => {
      let text = '';
      res.on('data', (c: Buffer) => (text += c.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
    });
    req.end(body);
  });
}

for (const drop of ['reset', 'close'] as const) {
  t.test(`a backend that drops the reused connection (${drop}): the request is sent again on a fresh one, once`, async (t) => {
    const backend = await racingBackend(t, drop);
    const edge = await startEdge(t, backend.url);

    t.same(await request(`${edge}/v1/models`, 'GET'), { status: 200, body: '{"n":1}' });
    t.same(await request(`${edge}/v1/models?again=1`, 'GET'), { status: 200, body: '{"n":2}' }, 'not a 503');
    t.equal(backend.drops(), 1, 'the second request met the race');

    // The retry's connection was its own; a third request opens the next pooled one, and the POST reuses it.
    t.same(await request(`${edge}/v1/models?third=1`, 'GET'), { status: 200, body: '{"n":3}' });
    const body = JSON.stringify({ model: 'm', pad: 'x'.repeat(100_000) });
    t.same(await request(`${edge}/v1/voice/sessions`, 'POST', body), { status: 200, body: '{"n":4}' }, 'a POST with its body too');
    t.equal(backend.drops(), 2, 'the POST met the race');
    t.same(
      backend.seen.map((s) => [s.method, s.url]),
      [
        ['GET', '/v1/models'],
        ['GET', '/v1/models?again=1'],
        ['GET', '/v1/models?third=1'],
        ['POST', '/v1/voice/sessions'],
      ],
      'each request processed exactly once',
    );
    t.equal(backend.seen[3]!.body, body, 'the body sent again is the whole body');
  });
}

t.test('a request the backend began to answer is never sent again', async (t) => {
  const backend = await racingBackend(t, 'answer-then-reset');
  const edge = await startEdge(t, backend.url);
  t.equal((await request(`${edge}/v1/models`, 'GET')).status, 200);
  const second = await request(`${edge}/v1/voice/sessions`, 'POST', '{}').catch(() => ({ status: 0, body: '' }));
  t.not(second.status, 200, 'no answer made up');
  t.equal(backend.drops(), 1);
  t.equal(backend.seen.length, 1, 'not replayed');
});

t.test('a body too large to keep is not sent again: the race answers 503 as before', async (t) => {
  const backend = await racingBackend(t, 'reset');
  const edge = await startEdge(t, backend.url);
  t.equal((await request(`${edge}/v1/models`, 'GET')).status, 200);
  const res = await request(`${edge}/v1/voice/sessions`, 'POST', JSON.stringify({ pad: 'x'.repeat(300 * 1024) }));
  t.equal(res.status, 503);
  t.match(JSON.parse(res.body), { error: { code: 'service_unavailable' } });
  t.equal(backend.drops(), 1);
  t.equal(backend.seen.length, 1);
});

t.test('an idle backend connection leaves the pool before the backend would close it', async (t) => {
  // Keep-Alive: timeout=2 → the edge keeps it at most 1 s (Node's agent leaves a second), under the backend's 2 s.
  let closed = false;
  const server = http.createServer((_req, res) => res.end('{}'));
  server.keepAliveTimeout = 2000;
  server.on('connection', (socket) => socket.once('close', () => (closed = true)));
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  t.teardown(() => (server.closeAllConnections(), server.close()));
  const edge = await startEdge(t, `http://127.0.0.1:${(server.address() as AddressInfo).port}`);
  // fetch keeps its own connection alive, so the edge's is not closed on the client's behalf (Connection: close).
  const res = await fetch(`${edge}/v1/models`);
  t.equal(res.status, 200);
  await res.text();
  await new Promise((resolve) => setTimeout(resolve, 1500));
  t.ok(closed, 'the edge closed its idle connection before the backend would have (2 s)');
});
