// Added latency of the npm-start edge: frame round trips through the edge against the same backend reached
// directly, N concurrent sockets (default 100). The backend answers each frame at once, so the difference is
// the edge's own cost. Prints figures; asserts nothing (STYLE.md: benchmarks are scripts).
//   node --conditions=@s2s/source --import tsx services/edge/bench/bench.ts [--sockets 100] [--frames 200]
import { once } from 'node:events';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { cpus } from 'node:os';
import { parseArgs } from 'node:util';
import { createLogger } from '@s2s/telemetry';
import WebSocket, { WebSocketServer } from 'ws';
import { createEdge } from '../src/edge.js';

const { values } = parseArgs({ options: { sockets: { type: 'string', default: '100' }, frames: { type: 'string', default: '200' } } });
const SOCKETS = Number(values.sockets);
const FRAMES = Number(values.frames);
// A 20 ms input_audio_buffer.append: 960 bytes of PCM16 as base64 in JSON.
const FRAME = JSON.stringify({ type: 'input_audio_buffer.append', audio: Buffer.alloc(960, 7).toString('base64') });

async function echoBackend(): Promise<{ url: string; close(): void }> {
  const server = http.createServer();
  const wss = new WebSocketServer({ server, perMessageDeflate: false, handleProtocols: () => 'svc-realtime-v1' });
  wss.on('connection', (ws) => ws.on('message', (data, binary) => ws.send(data, { binary })));
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, close: () => (wss.close(), server.close()) };
}

/** Every socket sends FRAMES frames one after another, each after the previous echo; returns round trips in ms. */
async function run(url: string): Promise<number[]> {
  const sockets = await Promise.all(
    Array.from({ length: SOCKETS }, async () => {
      const ws = new WebSocket(url, 'svc-realtime-v1', { perMessageDeflate: false });
      await once(ws, 'open');
      return ws;
    }),
  );
  const samples: number[] = [];
  await Promise.all(
    sockets.map(async (ws) => {
      for (let i = 0; i < FRAMES; i++) {
        const start = process.hrtime.bigint();
        ws.send(FRAME);
        await once(ws, 'message');
        samples.push(Number(process.hrtime.bigint() - start) / 1e6);
      }
      ws.close();
    }),
  );
  return samples.sort((a, b) => a - b);
}

const pct = (s: number[], p: number) => s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!;

const backend = await echoBackend();
const edge = createEdge({
  controlPlane: backend.url,
  relays: [backend.url],
  logger: createLogger({ service: 'edge-bench', level: 'silent' }),
});
edge.server.listen(0, '127.0.0.1');
await once(edge.server, 'listening');
const edgeUrl = `ws://127.0.0.1:${(edge.server.address() as AddressInfo).port}/v1/realtime`;
const directUrl = `${backend.url.replace('http', 'ws')}/v1/realtime`;

await run(directUrl); // warm-up of both paths (JIT, sockets)
await run(edgeUrl);
// Interleaved rounds, so a noisy neighbour hits both paths alike.
const direct: number[] = [];
const viaEdge: number[] = [];
for (let round = 0; round < 3; round++) {
  direct.push(...(await run(directUrl)));
  viaEdge.push(...(await run(edgeUrl)));
}
direct.sort((a, b) => a - b);
viaEdge.sort((a, b) => a - b);

const f = (n: number) => n.toFixed(3);
console.log(
  `edge benchmark: ${SOCKETS} sockets x ${FRAMES} frames x 3 rounds, ${cpus().length} cores (${cpus()[0]?.model ?? '?'}), node ${process.version}`,
);
console.log(`direct  p50 ${f(pct(direct, 50))} ms  p99 ${f(pct(direct, 99))} ms`);
console.log(`edge    p50 ${f(pct(viaEdge, 50))} ms  p99 ${f(pct(viaEdge, 99))} ms`);
console.log(`added   p50 ${f(pct(viaEdge, 50) - pct(direct, 50))} ms  p99 ${f(pct(viaEdge, 99) - pct(direct, 99))} ms`);
await edge.close();
backend.close();
