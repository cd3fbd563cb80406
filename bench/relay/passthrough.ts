// The benchmark's baseline: a bare `ws` pass-through proxy that forwards every message untouched, both ways,
// between a client and the upstream at TARGET_URL (the client's query string is kept). Prints its port.
import type { AddressInfo } from 'node:net';
import { WebSocket, WebSocketServer, type RawData } from 'ws';

const target = process.env.TARGET_URL;
if (!target) throw new Error('TARGET_URL is required');

const wss = new WebSocketServer({ port: Number(process.env.PORT ?? 0), host: '127.0.0.1', perMessageDeflate: false, maxPayload: 1 << 20 });

wss.on('connection', (client, req) => {
  const query = new URL(req.url ?? '/', 'http://proxy').search;
  const upstream = new WebSocket(target + query, { perMessageDeflate: false });
  let held: [RawData, boolean][] | null = [];
  client.on('message', (data, isBinary) => {
    if (held) held.push([data, isBinary]);
    else upstream.send(data as Buffer, { binary: isBinary });
  });
  upstream.on('open', () => {
    for (const [data, isBinary] of held ?? []) upstream.send(data as Buffer, { binary: isBinary });
    held = null;
  });
  upstream.on('message', (data, isBinary) => client.send(data as Buffer, { binary: isBinary }));
  client.on('close', () => upstream.close());
  upstream.on('close', () => client.close());
  client.on('error', () => upstream.terminate());
  upstream.on('error', () => client.terminate());
});

wss.on('listening', () => {
  process.stdout.write(`${JSON.stringify({ port: (wss.address() as AddressInfo).port })}\n`);
});
process.on('SIGTERM', () => process.exit(0));
