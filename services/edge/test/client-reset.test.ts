// A client that vanishes (its process exits, its socket reset) never takes the edge down, on TLS or plain HTTP.
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import net, { type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import tls from 'node:tls';
import t from 'tap';
import { createLogger } from '@s2s/telemetry';
import { selfSignedCertificate } from '@s2s/testing';
import { WebSocketServer } from 'ws';
import { createEdge } from '../src/edge.js';
import { controlPlane, listen, type Teardown } from './helpers.js';

const logger = createLogger({ service: 'edge-test', level: 'silent' });

/** A stand-in relay that answers every upgrade and every frame, and never closes first. */
async function relay(t: Teardown): Promise<{ url: string; clients: () => number }> {
  const server = http.createServer((_req, res) => res.end('{}'));
  const wss = new WebSocketServer({ server, handleProtocols: () => 'svc-realtime-v1' });
  wss.on('connection', (ws) => {
    ws.on('error', () => {});
    ws.send('{"hello":true}');
    ws.on('message', (data) => ws.send(data));
  });
  t.teardown(() => wss.close());
  return { url: await listen(t, server), clients: () => wss.clients.size };
}

/** Waits up to 2 s for the stand-in relay's WebSocket count to fall to 0. */
async function relayLetGo(clients: () => number): Promise<number> {
  for (let i = 0; i < 40 && clients() > 0; i++) await new Promise((resolve) => setTimeout(resolve, 50));
  return clients();
}

const dir = mkdtempSync(join(tmpdir(), 's2s-edge-reset-'));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));
const files = selfSignedCertificate(dir);
const ca = readFileSync(files.cert);

/** A connection to the edge, TLS or not, once it is ready to carry HTTP; `tcp` is what a reset resets. */
async function connect(port: number, secure: boolean): Promise<{ socket: net.Socket; tcp: net.Socket }> {
  const tcp = net.connect(port, '127.0.0.1');
  tcp.on('error', () => {});
  await once(tcp, 'connect');
  if (!secure) return { socket: tcp, tcp };
  const socket = tls.connect({ socket: tcp, ca, host: '127.0.0.1' });
  socket.on('error', () => {});
  await once(socket, 'secureConnect');
  return { socket, tcp };
}

/** Reads from `socket` until `text` has arrived. */
function waitFor(socket: net.Socket, text: string): Promise<void> {
  return new Promise((resolve) => {
    let seen = '';
    const onData = (chunk: Buffer) => {
      seen += chunk.toString('latin1');
      if (seen.includes(text)) {
        socket.off('data', onData);
        resolve();
      }
    };
    socket.on('data', onData);
  });
}

/** The client's process gone: its socket reset (RST), not closed. */
async function reset({ tcp }: { tcp: net.Socket }): Promise<void> {
  tcp.resetAndDestroy();
  // Long enough for the edge to read the RST on every socket it holds and for the proxied side to follow.
  await new Promise((resolve) => setTimeout(resolve, 100));
}

for (const secure of [true, false]) {
  const name = secure ? 'TLS' : 'plain HTTP';
  t.test(`${name}: clients reset mid-connection, the edge keeps serving`, async (t) => {
    const stand = await relay(t);
    const edge = createEdge({
      controlPlane: await controlPlane(t),
      relays: [stand.url],
      tls: secure ? { cert: readFileSync(files.cert), key: readFileSync(files.key) } : undefined,
      logger,
    });
    edge.server.listen(0, '127.0.0.1');
    await once(edge.server, 'listening');
    t.teardown(() => edge.close());
    const port = (edge.server.address() as AddressInfo).port;
    const base = `http${secure ? 's' : ''}://127.0.0.1:${port}`;
    const serves = async (what: string) => {
      const body = await new Promise<string>((resolve, reject) => {
        (secure ? https : http)
          .get(`${base}/v1/models`, { ca, agent: false }, (res) => {
            let text = '';
            res.on('data', (c) => (text += c));
            res.on('end', () => resolve(text));
          })
          .on('error', reject);
      });
      t.match(JSON.parse(body), { from: 'control-plane' }, `still serving after ${what}`);
    };
    await serves('nothing');

    // Connected (handshake done), no request yet.
    await reset(await connect(port, secure));
    await serves('a reset before any request');

    // A keep-alive connection, idle after its answer.
    const idle = await connect(port, secure);
    idle.socket.write('GET /v1/models HTTP/1.1\r\nHost: edge\r\nConnection: keep-alive\r\n\r\n');
    await waitFor(idle.socket, 'control-plane');
    await reset(idle);
    await serves('a reset of an idle keep-alive connection');

    // Half a request sent.
    const half = await connect(port, secure);
    half.socket.write('POST /v1/models HTTP/1.1\r\nHost: edge\r\nContent-Length: 100\r\n\r\n{"a":');
    await new Promise((resolve) => setTimeout(resolve, 50));
    await reset(half);
    await serves('a reset mid-body');

    // A WebSocket through the proxy path (TLS always proxies; plain HTTP does without a handoff channel).
    const upgrade =
      'GET /v1/realtime?session_id=vs_1 HTTP/1.1\r\nHost: edge\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n' +
      'Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Protocol: svc-realtime-v1\r\n\r\n';
    const attached = await connect(port, secure);
    attached.socket.write(upgrade);
    await waitFor(attached.socket, 'hello');
    await reset(attached);
    await serves('a reset of a proxied WebSocket');
    t.equal(await relayLetGo(stand.clients), 0, 'the relay side of the reset WebSocket is closed');

    // An upgrade request whose client resets before the relay has answered.
    const upgrading = await connect(port, secure);
    upgrading.socket.write(upgrade);
    await reset(upgrading);
    await serves('a reset during an upgrade');
    t.equal(await relayLetGo(stand.clients), 0, 'the relay side of an upgrade whose client reset is closed');

    // Mid-handshake (TLS) / mid-request line (plain): bytes sent, then RST.
    const early = net.connect(port, '127.0.0.1');
    early.on('error', () => {});
    await once(early, 'connect');
    early.write(secure ? Buffer.from([0x16, 0x03, 0x01, 0x00, 0x50]) : 'GET /v1/mo');
    await new Promise((resolve) => setTimeout(resolve, 20));
    await reset({ tcp: early });
    await serves('a reset mid-handshake');
  });
}
