// The edge: one port for the HTTP API and /v1/realtime (WebSocket), plain or TLS (decisions.md, "Running it").
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import net, { type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { createLogger } from '@s2s/telemetry';
import { selfSignedCertificate } from '@s2s/testing';
import { WebSocketServer } from 'ws';
import { createEdge, type EdgeOptions } from '../src/edge.js';
import { loadConfig } from '../src/config.js';
import { controlPlane, listen, open, refusal, roundTrip, type Teardown } from './helpers.js';

const logger = createLogger({ service: 'edge-test', level: 'silent' });

/** A stand-in relay: selects svc-realtime-v1 when offered and echoes each frame tagged with its name. */
async function relay(t: Teardown, name: string): Promise<string> {
  const server = http.createServer((_req, res) => {
    res.writeHead(400, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ from: name }));
  });
  const wss = new WebSocketServer({ server, handleProtocols: (offered) => (offered.has('svc-realtime-v1') ? 'svc-realtime-v1' : false) });
  wss.on('connection', (ws, req) => {
    ws.send(JSON.stringify({ from: name, url: req.url, authorization: req.headers.authorization ?? null }));
    ws.on('message', (data) => ws.send(`${name}:${String(data)}`));
  });
  t.teardown(() => wss.close());
  return listen(t, server);
}

async function startEdge(t: Teardown, opts: Omit<EdgeOptions, 'logger'>): Promise<{ http: string; ws: string; port: number }> {
  const edge = createEdge({ ...opts, logger });
  edge.server.listen(0, '127.0.0.1');
  await once(edge.server, 'listening');
  t.teardown(() => edge.close());
  const port = (edge.server.address() as AddressInfo).port;
  const s = opts.tls ? 's' : '';
  return { http: `http${s}://127.0.0.1:${port}`, ws: `ws${s}://127.0.0.1:${port}/v1/realtime`, port };
}

t.test('one port: HTTP to the control plane, /v1/realtime upgrades to the relays in turn', async (t) => {
  const edge = await startEdge(t, { controlPlane: await controlPlane(t), relays: [await relay(t, 'r1'), await relay(t, 'r2')] });

  const res = await fetch(`${edge.http}/v1/voice/sessions/vs_1?x=1`, {
    method: 'POST',
    body: '{}',
    headers: { 'content-type': 'application/json' },
  });
  t.equal(res.status, 200);
  t.equal(res.headers.get('x-request-id'), 'req_backend', "the backend's request id passes through");
  t.match(await res.json(), { from: 'control-plane', method: 'POST', url: '/v1/voice/sessions/vs_1?x=1', forwardedFor: /127\.0\.0\.1/ });
  const secrets = await fetch(`${edge.http}/v1/realtime/client_secrets`, { method: 'POST' });
  t.match(await secrets.json(), { from: 'control-plane' }, 'only /v1/realtime itself goes to a relay');

  const seen: string[] = [];
  for (let i = 0; i < 4; i++) {
    const { ws, hello } = await open(`${edge.ws}?session_id=vs_${i}`);
    t.equal(ws.protocol, 'svc-realtime-v1', 'the subprotocol negotiation passes through');
    t.equal(hello.url, `/v1/realtime?session_id=vs_${i}`);
    t.equal(hello.authorization, 'Bearer vr_sk_test', 'headers pass through');
    t.equal(await roundTrip(ws, `frame ${i}`), `${hello.from}:frame ${i}`, 'frames both ways');
    seen.push(hello.from);
    ws.close();
  }
  t.same(seen.sort(), ['r1', 'r1', 'r2', 'r2'], 'spread over both relays');
  const plain = await fetch(`${edge.http}/v1/realtime`);
  t.equal(plain.status, 400, "a plain GET /v1/realtime gets the relay's answer");

  // Phone media streams (no subprotocol, no Authorization) go to the relays too.
  for (const provider of ['twilio', 'telnyx']) {
    const { ws, hello } = await open(edge.ws.replace('/v1/realtime', `/v1/telephony/${provider}`));
    t.equal(hello.url, `/v1/telephony/${provider}`, `/v1/telephony/${provider} reaches a relay`);
    ws.close();
  }
});

t.test('refusals at the edge: an upgrade elsewhere (404), no backend answering (503)', async (t) => {
  const edge = await startEdge(t, { controlPlane: 'http://127.0.0.1:9', relays: ['http://127.0.0.1:9'] });
  const elsewhere = await refusal(`ws://127.0.0.1:${edge.port}/v1/models`);
  t.match(elsewhere, { status: 404, body: { error: { code: 'not_found', type: 'not_found_error' } } });
  t.equal(elsewhere.body.error.request_id, elsewhere.requestId);
  const down = await refusal(edge.ws);
  t.match(down, { status: 503, body: { error: { code: 'service_unavailable' } } });
  const res = await fetch(`${edge.http}/v1/models`);
  t.equal(res.status, 503);
  t.match(await res.json(), { error: { code: 'service_unavailable', type: 'service_unavailable_error' } });
  t.equal(res.headers.get('retry-after'), '1');
});

t.test("what the edge's parser refuses gets the one answer every server gives (431, 400)", async (t) => {
  const edge = await startEdge(t, { controlPlane: await controlPlane(t), relays: ['http://127.0.0.1:9'] });
  const exchange = (bytes: string) =>
    new Promise<string>((resolve, reject) => {
      const socket = net.connect(edge.port, '127.0.0.1');
      let text = '';
      socket.setEncoding('latin1');
      socket.on('data', (c: string) => (text += c));
      socket.on('error', reject);
      socket.on('close', () => resolve(text));
      socket.write(bytes, 'latin1');
    });
  const big = await exchange(`GET /v1/models HTTP/1.1\r\nHost: a\r\nX-Big: ${'a'.repeat(17_000)}\r\n\r\n`);
  t.match(big, /^HTTP\/1\.1 431 /);
  t.match(JSON.parse(big.split('\r\n\r\n')[1]!), { error: { code: 'request_header_fields_too_large', type: 'invalid_request_error' } });
  const bad = await exchange('GET /v1/models HTTP/1.1\r\nHost: a\r\nX: a\x01b\r\n\r\n');
  t.match(bad, /^HTTP\/1\.1 400 /);
  t.match(JSON.parse(bad.split('\r\n\r\n')[1]!), { error: { code: 'invalid_request' } });
});

t.test('TLS_CERT_FILE/TLS_KEY_FILE: https and wss on the same port', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 's2s-edge-tls-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const { cert, key } = selfSignedCertificate(dir);
  const config = loadConfig({ TLS_CERT_FILE: cert, TLS_KEY_FILE: key });
  t.equal(config.TLS_CERT_FILE, cert);
  t.throws(() => loadConfig({ TLS_CERT_FILE: cert }), /TLS_CERT_FILE and TLS_KEY_FILE go together/);

  const edge = await startEdge(t, {
    controlPlane: await controlPlane(t),
    relays: [await relay(t, 'r1')],
    tls: { cert: readFileSync(cert), key: readFileSync(key) },
  });
  const ca = readFileSync(cert);
  const body = await new Promise<string>((resolve, reject) => {
    https
      .get(`${edge.http}/v1/models`, { ca }, (res) => {
        let text = '';
        res.on('data', (c) => (text += c));
        res.on('end', () => resolve(text));
      })
      .on('error', reject);
  });
  t.match(JSON.parse(body), { from: 'control-plane', url: '/v1/models' }, 'https');
  const { ws, hello } = await open(`${edge.ws}?session_id=vs_tls`, { ca });
  t.equal(hello.from, 'r1', 'wss');
  t.equal(await roundTrip(ws, 'secure'), 'r1:secure');
  ws.close();
  await t.rejects(fetch(`http://127.0.0.1:${edge.port}/v1/models`), 'no plain HTTP on the TLS port');
});
