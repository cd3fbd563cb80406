// Added latency of the npm-start edge: frame round trips through the edge against the same backend reached
// directly, N concurrent sockets (default 100) each sending a 20 ms audio frame every 20 ms, as a live
// microphone does. The backend (its own process) answers each frame at once and the edge runs as its own
// process (services/edge/src/main.ts), as in npm start, so the difference is the edge's own cost.
// Prints figures; asserts nothing (STYLE.md: benchmarks are scripts). Ports 18400-18401.
//   node --conditions=@s2s/source --import tsx services/edge/bench/bench.ts [--sockets 100] [--frames 250]
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import http from 'node:http';
import { createConnection } from 'node:net';
import { cpus, loadavg } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import WebSocket, { WebSocketServer } from 'ws';

const { values } = parseArgs({
  options: {
    sockets: { type: 'string', default: '100' },
    frames: { type: 'string', default: '250' },
    role: { type: 'string', default: 'client' },
    'edge-port': { type: 'string', default: '18400' },
    'backend-port': { type: 'string', default: '18401' },
  },
});
const EDGE_PORT = Number(values['edge-port']);
const BACKEND_PORT = Number(values['backend-port']);
const SOCKETS = Number(values.sockets);
const FRAMES = Number(values.frames);
// A 20 ms input_audio_buffer.append: 960 bytes of PCM16 as base64 in JSON.
const FRAME = JSON.stringify({ type: 'input_audio_buffer.append', audio: Buffer.alloc(960, 7).toString('base64') });

/** The backend process: a WebSocket server that echoes every frame (a relay with no work behind it). */
async function echoBackend(): Promise<void> {
  const server = http.createServer((_req, res) => res.end('ok'));
  const wss = new WebSocketServer({ server, perMessageDeflate: false, handleProtocols: () => 'svc-realtime-v1' });
  wss.on('connection', (ws) => ws.on('message', (data, binary) => ws.send(data, { binary })));
  server.listen(BACKEND_PORT, '127.0.0.1');
  await once(server, 'listening');
  process.on('SIGTERM', () => process.exit(0));
}

const here = dirname(fileURLToPath(import.meta.url));
const NODE_ARGS = ['--conditions=@s2s/source', '--import', 'tsx'];

function spawnProcess(args: string[], env: Record<string, string>): ChildProcess {
  return spawn(process.execPath, [...NODE_ARGS, ...args], { cwd: join(here, '..'), env: { ...process.env, ...env }, stdio: 'ignore' });
}

async function waitForPort(port: number): Promise<void> {
  for (;;) {
    const ok = await new Promise<boolean>((resolve) => {
      const s = createConnection({ host: '127.0.0.1', port });
      s.once('connect', () => (s.destroy(), resolve(true)));
      s.once('error', () => resolve(false));
    });
    if (ok) return;
    await new Promise((r) => setTimeout(r, 100));
  }
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
      // Spread the sockets' phases over one 20 ms period, then one frame every 20 ms each.
      await new Promise((r) => setTimeout(r, Math.random() * 20));
      let due = performance.now();
      for (let i = 0; i < FRAMES; i++) {
        const start = process.hrtime.bigint();
        ws.send(FRAME);
        await once(ws, 'message');
        samples.push(Number(process.hrtime.bigint() - start) / 1e6);
        due += 20;
        await new Promise((r) => setTimeout(r, Math.max(0, due - performance.now())));
      }
      ws.close();
    }),
  );
  return samples.sort((a, b) => a - b);
}

const pct = (s: number[], p: number) => s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!;

if (values.role === 'backend') {
  await echoBackend();
} else {
  const backendUrl = `http://127.0.0.1:${BACKEND_PORT}`;
  const backend = spawnProcess(['bench/bench.ts', '--role', 'backend', '--backend-port', String(BACKEND_PORT)], {});
  const edge = spawnProcess(['src/main.ts'], {
    HTTP_PORT: String(EDGE_PORT),
    CONTROL_PLANE_URL: backendUrl,
    RELAY_URLS: backendUrl,
    LOG_LEVEL: 'silent',
  });
  try {
    await waitForPort(BACKEND_PORT);
    await waitForPort(EDGE_PORT);
    const edgeUrl = `ws://127.0.0.1:${EDGE_PORT}/v1/realtime`;
    const directUrl = `ws://127.0.0.1:${BACKEND_PORT}/v1/realtime`;
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
      `edge benchmark: ${SOCKETS} sockets x ${FRAMES} frames (one per 20 ms) x 3 rounds, ${cpus().length} cores (${cpus()[0]?.model ?? '?'}), load ${loadavg()[0]!.toFixed(1)}, node ${process.version}`,
    );
    console.log(`direct  p50 ${f(pct(direct, 50))} ms  p99 ${f(pct(direct, 99))} ms`);
    console.log(`edge    p50 ${f(pct(viaEdge, 50))} ms  p99 ${f(pct(viaEdge, 99))} ms`);
    console.log(`added   p50 ${f(pct(viaEdge, 50) - pct(direct, 50))} ms  p99 ${f(pct(viaEdge, 99) - pct(direct, 99))} ms`);
  } finally {
    edge.kill('SIGTERM');
    backend.kill('SIGTERM');
  }
}
