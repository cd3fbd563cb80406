// Added latency of the npm-start edge: frame round trips through the edge against the same backend reached
// directly, N concurrent sockets (default 100) each sending a 20 ms audio frame every 20 ms, as a live
// microphone does. The backend (its own process) answers each frame at once and the edge runs as its own
// process (services/edge/src/main.ts), as in npm start, so the difference is the edge's own cost.
// As npm start runs it, the edge hands each connection over to the backend (@s2s/handoff; this process
// brokers, as scripts/start.mjs does, and the backend serves handed-over connections as a relay does);
// --proxy measures the edge proxying every frame instead (RELAY_HANDOFF=off: TLS, or an edge run alone).
// Prints figures; asserts nothing (STYLE.md: benchmarks are scripts). Ports 18400-18401.
//   node --conditions=@s2s/source --import tsx bench/edge/bench.ts [--sockets 100] [--frames 250]
//     [--proxy] [--edge-port P] [--backend-port P]
//     [--mixed] (each round: half the sockets direct, half through the edge at once, so both see the same load)
//     [--edge-cpu N] (the edge pinned to CPU N with taskset; run the bench itself under `taskset -c M`)
// Besides latency it prints each process's CPU per round trip (from /proc), which the machine's load moves less.
import { spawn, type ChildProcess, type StdioOptions } from 'node:child_process';
import { once } from 'node:events';
import http from 'node:http';
import { createConnection } from 'node:net';
import { readFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { injectConnection, serveHandoffs } from '@s2s/handoff';
import { brokerHandoffs } from '@s2s/handoff/broker';
import WebSocket, { WebSocketServer } from 'ws';
import { serviceDir } from '../services.js';

const { values } = parseArgs({
  options: {
    sockets: { type: 'string', default: '100' },
    frames: { type: 'string', default: '250' },
    role: { type: 'string', default: 'client' },
    'edge-port': { type: 'string', default: '18400' },
    'backend-port': { type: 'string', default: '18401' },
    mixed: { type: 'boolean', default: false },
    proxy: { type: 'boolean', default: false },
    'edge-cpu': { type: 'string' },
  },
});
const EDGE_PORT = Number(values['edge-port']);
const BACKEND_PORT = Number(values['backend-port']);
const SOCKETS = Number(values.sockets);
const FRAMES = Number(values.frames);
// A 20 ms input_audio_buffer.append: 960 bytes of PCM16 as base64 in JSON.
const FRAME = JSON.stringify({ type: 'input_audio_buffer.append', audio: Buffer.alloc(960, 7).toString('base64') });

/**
 * The backend process: a WebSocket server that echoes every frame (a relay with no work behind it), on its
 * port and for the connections the edge hands over.
 */
async function echoBackend(): Promise<void> {
  const server = http.createServer((_req, res) => res.end('ok'));
  const wss = new WebSocketServer({ server, perMessageDeflate: false, handleProtocols: () => 'svc-realtime-v1' });
  wss.on('connection', (ws) => ws.on('message', (data, binary) => ws.send(data, { binary })));
  server.listen(BACKEND_PORT, '127.0.0.1');
  await once(server, 'listening');
  // ws answers an upgrade synchronously: once the request is read, it is answered.
  serveHandoffs(async (socket, request) => injectConnection(server, socket, request));
  process.on('SIGTERM', () => process.exit(0));
}

const NODE_ARGS = ['--conditions=@s2s/source', '--import', 'tsx'];

function spawnProcess(args: string[], env: Record<string, string>, cpu?: string): ChildProcess {
  const [cmd, argv] = cpu === undefined ? [process.execPath, []] : ['taskset', ['-c', cpu, process.execPath]];
  const stdio: StdioOptions = ['ignore', 'ignore', 'ignore', ...(values.proxy ? [] : ['ipc' as const])];
  return spawn(cmd, [...argv, ...NODE_ARGS, ...args], { cwd: serviceDir('edge'), env: { ...process.env, ...env }, stdio });
}

/** CPU time (user + system) of a process so far, in ms, from /proc (taskset execs node in its own pid). */
function cpuMs(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100; // utime, stime in USER_HZ (100)
}
const ownCpuMs = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};

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

/**
 * Each of `urls` (one socket per entry) sends FRAMES frames, one every 20 ms, each after the previous echo;
 * returns the round trips in ms per url. One message listener per socket and plain timers: the client's own
 * cost per frame stays small, since it shares the cores with the edge and the backend.
 */
async function run(urls: string[], attach: Map<string, number[]> = new Map()): Promise<Map<string, number[]>> {
  const samples = new Map<string, number[]>(urls.map((u) => [u, []]));
  const sockets = await Promise.all(
    urls.map(async (url) => {
      const opening = performance.now();
      const ws = new WebSocket(url, 'svc-realtime-v1', { perMessageDeflate: false });
      await once(ws, 'open');
      // Connect to 101, all sockets at once (the handoff's IPC round trips are paid here, once per socket).
      const took = performance.now() - opening;
      if (!attach.has(url)) attach.set(url, []);
      attach.get(url)!.push(took);
      return { ws, out: samples.get(url)! };
    }),
  );
  await Promise.all(
    sockets.map(
      ({ ws, out }) =>
        new Promise<void>((done) => {
          let sent = 0;
          let start = 0;
          let due = 0;
          const send = () => {
            start = performance.now();
            ws.send(FRAME);
          };
          ws.on('message', () => {
            out.push(performance.now() - start);
            if (++sent === FRAMES) return void (ws.close(), done());
            due += 20;
            setTimeout(send, Math.max(0, due - performance.now()));
          });
          // Spread the sockets' phases over one 20 ms period, then one frame every 20 ms each.
          setTimeout(() => ((due = performance.now()), send()), Math.random() * 20);
        }),
    ),
  );
  return samples;
}

const pct = (s: number[], p: number) => s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!;

if (values.role === 'backend') {
  await echoBackend();
} else {
  const backendUrl = `http://127.0.0.1:${BACKEND_PORT}`;
  const backend = spawnProcess([fileURLToPath(import.meta.url), '--role', 'backend', '--backend-port', String(BACKEND_PORT)], {});
  const edge = spawnProcess(
    ['src/main.ts'],
    {
      HTTP_PORT: String(EDGE_PORT),
      CONTROL_PLANE_URL: backendUrl,
      RELAY_URLS: backendUrl,
      RELAY_HANDOFF: values.proxy ? 'off' : 'ipc',
      LOG_LEVEL: 'silent',
    },
    values['edge-cpu'],
  );
  if (!values.proxy) brokerHandoffs(edge, [backend]);
  try {
    await waitForPort(BACKEND_PORT);
    await waitForPort(EDGE_PORT);
    const edgeUrl = `ws://127.0.0.1:${EDGE_PORT}/v1/realtime`;
    const directUrl = `ws://127.0.0.1:${BACKEND_PORT}/v1/realtime`;
    const only = (url: string) => Array.from({ length: SOCKETS }, () => url);
    const half = Array.from({ length: SOCKETS }, (_, i) => (i % 2 === 0 ? directUrl : edgeUrl));
    await run(only(directUrl)); // warm-up of both paths (JIT, sockets)
    await run(only(edgeUrl));
    // Interleaved rounds, so a noisy neighbour hits both paths alike; --mixed runs both paths at once.
    const direct: number[] = [];
    const viaEdge: number[] = [];
    const attach = new Map<string, number[]>();
    const cpu = {
      direct: { client: 0, backend: 0, edge: 0, trips: 0, edgeTrips: 0 },
      edge: { client: 0, backend: 0, edge: 0, trips: 0, edgeTrips: 0 },
    };
    const measured = async (path: 'direct' | 'edge', urls: string[]) => {
      const before = { client: ownCpuMs(), backend: cpuMs(backend.pid!), edge: cpuMs(edge.pid!) };
      const got = await run(urls, attach);
      const c = cpu[path];
      c.client += ownCpuMs() - before.client;
      c.backend += cpuMs(backend.pid!) - before.backend;
      c.edge += cpuMs(edge.pid!) - before.edge;
      c.trips += urls.length * FRAMES;
      c.edgeTrips += urls.filter((u) => u === edgeUrl).length * FRAMES;
      direct.push(...(got.get(directUrl) ?? []));
      viaEdge.push(...(got.get(edgeUrl) ?? []));
    };
    for (let round = 0; round < 3; round++) {
      if (values.mixed) {
        await measured('edge', half);
      } else {
        await measured('direct', only(directUrl));
        await measured('edge', only(edgeUrl));
      }
    }
    direct.sort((a, b) => a - b);
    viaEdge.sort((a, b) => a - b);
    const f = (n: number) => n.toFixed(3);
    const us = (ms: number, trips: number) => (trips === 0 ? '-' : ((ms * 1000) / trips).toFixed(1));
    console.log(
      `edge benchmark (${values.proxy ? 'proxy: every frame through the edge' : 'handoff: the connection handed to the backend, as npm start'}): ${SOCKETS} sockets x ${FRAMES} frames (one per 20 ms) x 3 rounds${values.mixed ? ', mixed (half direct, half via the edge, at once)' : ''}${values['edge-cpu'] === undefined ? '' : `, edge on CPU ${values['edge-cpu']}`}, ${cpus().length} cores (${cpus()[0]?.model ?? '?'}), load ${loadavg()[0]!.toFixed(1)}, node ${process.version}`,
    );
    console.log(`direct  p50 ${f(pct(direct, 50))} ms  p99 ${f(pct(direct, 99))} ms`);
    console.log(`edge    p50 ${f(pct(viaEdge, 50))} ms  p99 ${f(pct(viaEdge, 99))} ms`);
    console.log(`added   p50 ${f(pct(viaEdge, 50) - pct(direct, 50))} ms  p99 ${f(pct(viaEdge, 99) - pct(direct, 99))} ms`);
    for (const [name, url] of [
      ['direct', directUrl],
      ['edge', edgeUrl],
    ] as const) {
      const a = (attach.get(url) ?? []).sort((x, y) => x - y);
      if (a.length > 0)
        console.log(`attach (${name}, ${a.length} sockets, connect to 101)  p50 ${f(pct(a, 50))} ms  p99 ${f(pct(a, 99))} ms`);
    }
    for (const path of ['direct', 'edge'] as const) {
      const c = cpu[path];
      if (c.trips === 0) continue;
      console.log(
        `cpu per round trip (${path === 'edge' && values.mixed ? 'mixed rounds' : `${path} rounds`}): client ${us(c.client, c.trips)} us, backend ${us(c.backend, c.trips)} us, edge ${us(c.edge, c.edgeTrips)} us per trip through it`,
      );
    }
  } finally {
    edge.kill('SIGTERM');
    backend.kill('SIGTERM');
  }
}
