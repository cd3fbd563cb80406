// Shared by the edge's tests: stand-in backends and WebSocket clients.
import { once } from 'node:events';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import WebSocket from 'ws';

export interface Teardown {
  teardown(fn: () => unknown): void;
}

export async function listen(t: Teardown, server: http.Server): Promise<string> {
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  t.teardown(() => {
    server.closeAllConnections();
    server.close();
  });
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** A stand-in control plane: answers every request with what it saw. */
export function controlPlane(t: Teardown): Promise<string> {
  return listen(
    t,
    http.createServer((req, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'x-request-id': 'req_backend' });
      res.end(JSON.stringify({ from: 'control-plane', method: req.method, url: req.url, forwardedFor: req.headers['x-forwarded-for'] }));
    }),
  );
}

export function open(url: string, opts: WebSocket.ClientOptions = {}): Promise<{ ws: WebSocket; hello: any }> {
  const ws = new WebSocket(url, ['svc-realtime-v1'], { headers: { authorization: 'Bearer vr_sk_test' }, ...opts });
  return new Promise((resolve, reject) => {
    ws.once('message', (data) => resolve({ ws, hello: JSON.parse(String(data)) }));
    ws.once('error', reject);
    ws.once('unexpected-response', (_req, res) => reject(new Error(`refused ${res.statusCode}`)));
  });
}

export function roundTrip(ws: WebSocket, text: string): Promise<string> {
  return new Promise((resolve) => {
    ws.once('message', (data) => resolve(String(data)));
    ws.send(text);
  });
}

export function refusal(url: string, opts: WebSocket.ClientOptions = {}): Promise<{ status: number; body: any; requestId: unknown }> {
  const ws = new WebSocket(url, ['svc-realtime-v1'], opts);
  return new Promise((resolve, reject) => {
    ws.once('open', () => reject(new Error('upgraded')));
    ws.on('error', () => {});
    ws.once('unexpected-response', (_req, res) => {
      let text = '';
      res.on('data', (c) => (text += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text), requestId: res.headers['x-request-id'] }));
    });
  });
}
