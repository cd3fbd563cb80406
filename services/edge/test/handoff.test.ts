// The edge of `npm start` hands /v1/realtime connections over to the relays (@s2s/handoff): real processes
// (the edge's main.ts, stand-in relays from ./handoff-relay.ts), this test process brokering as start.mjs does.
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createConnection, createServer, type AddressInfo, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { brokerHandoffs } from '@s2s/handoff/broker';
import { selfSignedCertificate } from '@s2s/testing';
import { controlPlane, open, refusal, roundTrip, type Teardown } from './helpers.js';

const EDGE_DIR = fileURLToPath(new URL('..', import.meta.url));

interface Proc {
  child: ChildProcess;
  port: number;
}

/** Spawns a TypeScript entry point (with an IPC channel unless `ipc` is false); resolves once it logged `listening`. */
function spawnWithIpc(t: Teardown, script: string, env: Record<string, string>, listening: string, ipc = true): Promise<Proc> {
  const child = spawn(process.execPath, ['--import', 'tsx', script], {
    cwd: EDGE_DIR,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe', ...(ipc ? (['ipc'] as const) : [])],
  });
  t.teardown(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });
  return new Promise((resolve, reject) => {
    let out = '';
    const onData = (chunk: Buffer) => {
      out += chunk.toString();
      for (const line of out.split('\n')) {
        try {
          const o = JSON.parse(line) as { msg?: string; port?: number };
          if (o.msg === listening) return resolve({ child, port: o.port ?? 0 });
        } catch {
          // not a log line
        }
      }
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.once('exit', (code) => reject(new Error(`${script} exited (${code}):\n${out}`)));
  });
}

async function freePort(): Promise<number> {
  const server = createServer().listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  server.close();
  return port;
}

const startRelay = (t: Teardown, name: string, env: Record<string, string> = {}, ipc = true) =>
  spawnWithIpc(t, 'test/handoff-relay.ts', { RELAY_NAME: name, ...env }, 'fixture relay listening', ipc);

/** The edge as npm start runs it: RELAY_HANDOFF=ipc, the relays brokered by this process. */
async function startEdge(t: Teardown, relays: Proc[], env: Record<string, string> = {}): Promise<Proc & { ws: string; http: string }> {
  const port = await freePort();
  const edge = await spawnWithIpc(
    t,
    'src/main.ts',
    {
      HTTP_PORT: String(port),
      CONTROL_PLANE_URL: await controlPlane(t),
      RELAY_URLS: relays.map((r) => `http://127.0.0.1:${r.port}`).join(','),
      RELAY_HANDOFF: 'ipc',
      LOG_LEVEL: 'info',
      ...env,
    },
    'edge listening',
  );
  brokerHandoffs(
    edge.child,
    relays.map((r) => r.child),
  );
  const s = env.TLS_CERT_FILE ? 's' : '';
  return { ...edge, port, ws: `ws${s}://127.0.0.1:${port}/v1/realtime`, http: `http${s}://127.0.0.1:${port}` };
}

/** A masked text frame, as a client sends it (RFC 6455 §5.2), for payloads under 126 bytes. */
function clientFrame(text: string): Buffer {
  const payload = Buffer.from(text);
  const mask = Buffer.from([1, 2, 3, 4]);
  return Buffer.concat([Buffer.from([0x81, 0x80 | payload.length]), mask, payload.map((b, i) => b ^ mask[i % 4]!)]);
}

/** The text frames in `data` after the 101 response (the server's are unmasked and short here). */
function serverTexts(data: Buffer): string[] {
  const texts: string[] = [];
  let at = data.indexOf('\r\n\r\n') + 4;
  while (at + 2 <= data.length) {
    let len = data[at + 1]! & 0x7f;
    let start = at + 2;
    if (len === 126) {
      len = data.readUInt16BE(at + 2);
      start += 2;
    }
    if (start + len > data.length) break;
    texts.push(data.subarray(start, start + len).toString());
    at = start + len;
  }
  return texts;
}

t.test('handoff: the connection itself goes to the relays in turn; the relay sees the client and its request', async (t) => {
  const edge = await startEdge(t, [await startRelay(t, 'r1'), await startRelay(t, 'r2')]);
  const res = await fetch(`${edge.http}/v1/models`);
  t.match(await res.json(), { from: 'control-plane', url: '/v1/models' }, 'HTTP is still proxied to the control plane');

  const seen: string[] = [];
  for (let i = 0; i < 4; i++) {
    const { ws, hello } = await open(`${edge.ws}?session_id=vs_${i}`, {
      headers: { authorization: 'Bearer vr_sk_test', origin: 'https://app.example', 'x-forwarded-for': '203.0.113.9' },
    });
    t.equal(hello.via, 'handoff', 'the relay was handed the connection');
    t.equal(hello.url, `/v1/realtime?session_id=vs_${i}`);
    t.equal(ws.protocol, 'svc-realtime-v1', 'the subprotocol negotiated by the relay');
    t.match(
      hello.headers,
      {
        authorization: 'Bearer vr_sk_test',
        origin: 'https://app.example',
        'sec-websocket-protocol': 'svc-realtime-v1',
        'x-forwarded-for': '203.0.113.9,127.0.0.1',
        'x-forwarded-proto': 'ws',
        'x-forwarded-port': String(edge.port),
        'x-forwarded-host': `127.0.0.1:${edge.port}`,
      },
      "the client's headers as it sent them, and what a proxy adds",
    );
    t.equal(hello.remotePort, (ws as unknown as { _socket: Socket })._socket.localPort, "the relay's peer is the client itself");
    t.equal(await roundTrip(ws, `frame ${i}`), `${hello.from}:frame ${i}`, 'frames both ways');
    seen.push(hello.from);
    ws.close();
  }
  t.same(seen.sort(), ['r1', 'r1', 'r2', 'r2'], 'spread over both relays');
});

t.test('handoff: bytes sent with the request and right after the 101 are not lost', async (t) => {
  const edge = await startEdge(t, [await startRelay(t, 'r1')]);
  const socket = createConnection({ host: '127.0.0.1', port: edge.port });
  t.teardown(() => socket.destroy());
  await once(socket, 'connect');
  const request = [
    'GET /v1/realtime?session_id=vs_raw HTTP/1.1',
    `Host: 127.0.0.1:${edge.port}`,
    'Upgrade: websocket',
    'Connection: Upgrade',
    'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==',
    'Sec-WebSocket-Version: 13',
    'Sec-WebSocket-Protocol: svc-realtime-v1',
  ].join('\r\n');
  // The first frame in the same write as the request: the edge reads it with the request and passes it on.
  socket.write(Buffer.concat([Buffer.from(`${request}\r\n\r\n`), clientFrame('with the request')]));
  let data = Buffer.alloc(0);
  const texts = () => serverTexts(data);
  const until = (n: number) =>
    new Promise<void>((resolve) => {
      const check = () => (texts().length >= n ? (socket.off('data', onData), resolve()) : undefined);
      const onData = (chunk: Buffer) => {
        data = Buffer.concat([data, chunk]);
        check();
      };
      socket.on('data', onData);
      check();
    });
  await until(1);
  t.match(data.toString('latin1'), /^HTTP\/1\.1 101 /, 'upgraded');
  // Then a burst at once, as a microphone that was already running.
  socket.write(Buffer.concat(Array.from({ length: 20 }, (_, i) => clientFrame(`burst ${i}`))));
  await until(22);
  const [hello, ...echoes] = texts();
  t.match(JSON.parse(hello!), { from: 'r1', via: 'handoff' });
  t.same(echoes, ['r1:with the request', ...Array.from({ length: 20 }, (_, i) => `r1:burst ${i}`)], 'every frame, in order');
});

t.test('a relay that exits before answering: the client gets a 503 ErrorResponse, and so do later attaches', async (t) => {
  const relay = await startRelay(t, 'r1', { RELAY_HOLD: '1' });
  const edge = await startEdge(t, [relay]);
  const held = once(relay.child, 'message');
  const answer = refusal(edge.ws);
  t.match((await held)[0], { type: 'fixture:held' }, 'the relay has the connection');
  relay.child.kill('SIGKILL');
  const inFlight = await answer;
  t.match(inFlight, { status: 503, body: { error: { code: 'service_unavailable', type: 'service_unavailable_error' } } });
  t.equal(inFlight.body.error.request_id, inFlight.requestId, 'with its request id');
  const later = await refusal(edge.ws);
  t.match(later, { status: 503, body: { error: { code: 'service_unavailable' } } }, 'a relay gone is not handed more');
});

t.test('a relay the parent cannot hand the connection to (no channel to it): the edge proxies it', async (t) => {
  const edge = await startEdge(t, [await startRelay(t, 'r1', {}, false)]);
  for (const text of ['first', 'second']) {
    const { ws, hello } = await open(edge.ws);
    t.match(hello, { from: 'r1', via: 'port' }, 'proxied to the relay port');
    t.equal(await roundTrip(ws, text), `r1:${text}`, 'frames both ways');
    ws.close();
  }
});

t.test('the edge stopping with connections in flight answers them 503', async (t) => {
  const relay = await startRelay(t, 'r1', { RELAY_HOLD: '1' });
  const edge = await startEdge(t, [relay]);
  const held = once(relay.child, 'message');
  const answer = refusal(edge.ws);
  await held;
  edge.child.kill('SIGTERM');
  t.match(await answer, { status: 503, body: { error: { code: 'service_unavailable' } } });
  t.equal((await once(edge.child, 'exit'))[0], 0, 'the edge exits cleanly');
});

t.test('TLS: the edge proxies upgrades even with a handoff channel (the TLS state lives in the edge)', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 's2s-edge-handoff-tls-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const { cert, key } = selfSignedCertificate(dir);
  const edge = await startEdge(t, [await startRelay(t, 'r1')], { TLS_CERT_FILE: cert, TLS_KEY_FILE: key });
  const { ws, hello } = await open(edge.ws, { ca: readFileSync(cert) });
  t.match(hello, { from: 'r1', via: 'port' }, 'proxied to the relay port');
  t.equal(await roundTrip(ws, 'secure'), 'r1:secure');
  ws.close();
});
