// Relay benchmark (issues 4 and 13): N sessions streaming 20 ms frames in real time through the relay to the
// local simulator's `echo-stream` model, against a bare ws pass-through proxy in front of the same simulator
// and a direct connection to it. Relays and proxies run on the first cores, the simulator and the load on the
// last one. Usage: npm run bench -- relay [options]; every option also has its BENCH_ variable:
//   --sessions=50,100,200 (BENCH_SESSIONS)  --seconds=10 (BENCH_SECONDS)  --warmup=3 (BENCH_WARMUP)
//   --rounds=3 (BENCH_ROUNDS)  --idle=300 (BENCH_IDLE)  --nice=-10 (BENCH_NICE: priority on a shared machine)
//   --workers=0 (BENCH_WORKERS: load generator processes; 0 = this process)
//   --relays=1 (BENCH_RELAYS: relay processes, and as many pass-through proxies; sessions spread over them)
//   --dialect=svc-realtime-v1|openai (BENCH_DIALECT: the client protocol; openai = the legacy path)
//   --prime=10 (BENCH_PRIME: seconds of unmeasured load through the relay and the proxy, at the first N, before
//   the first measured run, so that every N measures optimized code rather than the JIT's warm-up; 0 = none)
//   --mode=pcm|phone|webrtc (BENCH_MODE): phone = issue 26's phone mode, a Twilio media stream per session (μ-law
//   8 kHz, 20 ms media messages, the `ek_` secret in the start's custom parameters, marks answered); webrtc = issue
//   27's, a WebRTC call per session from werift peers in --peers=1 (BENCH_PEERS) processes of webrtc-peers.ts on the
//   load core, the relay's calls on UDP port BENCH_WEBRTC_UDP_PORT (19310) of the loopback. Each against the relay's
//   PCM16 WebSocket sessions and the pass-through in alternated windows of one run (compareModes).
// BENCH_RELAY_NODE_ARGS and BENCH_PROXY_NODE_ARGS (e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof") and
// BENCH_DEBUG=1 for investigations (it also prints each run's measured window and pids, in CLOCK_MONOTONIC
// seconds as `perf record -k CLOCK_MONOTONIC` stamps samples); BENCH_STDOUT_DIR=<dir> also writes each server's
// stdout (V8's --trace-opt/--trace-deopt lines among the logs) to <dir>/<script>-<pid>.out.
// Paired comparison with another tree (issue 9's bound; docs/benchmarks.md, "Relay: two trees compared, paired"):
//   --compare=<tree> (BENCH_COMPARE) also starts that tree's relay (its services/relay/src/main.ts and node_modules,
//   same database, sessions, simulator and bus prefix), primes both relays alike, then per N runs ROUNDS rounds of
//   three windows (pass-through, this relay, the other), in palindromic order (bench/relay/ab-stats.ts roundOrder), and
//   prints per N both relays ÷ bare and this ÷ other with its within-run 95 % interval and per-round SD; no direct
//   runs and no memory test. --compare-out=<file.jsonl> (BENCH_COMPARE_OUT) appends the run's windows, which
//   `bench/relay/ab.ts --paired` pools over runs (the run is the unit: a fresh relay's JIT state varies per run, so more
//   runs beat more rounds). One run, about 4.5 min on 2 cores with 4 rounds, about 3 with 2:
//   flock <lock file> npm run bench -- relay --compare=<tree> --sessions=50,100,200 --rounds=4
//     --seconds=3 --warmup=2 --prime=10 --nice=-10 --compare-out=paired.jsonl
import { execFileSync, fork, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { appendFileSync, createWriteStream, readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { resolve as resolvePath } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { connectBus } from '@s2s/bus';
import { REALTIME_PROTOCOL, TELEPHONY_PATHS } from '@s2s/contract';
import { BYTES_PER_MS } from '@s2s/core';
import { createSession, mintClientSecret } from '@s2s/sessions';
import { createTestDatabase, createWalletAndKey } from '@s2s/db/testing';
import WebSocket from 'ws';
import {
  expMeanInterval,
  mean,
  pairedSummary,
  roundLogRatios,
  roundOrder,
  type PairedRecord,
  type PairedSide,
  type PairedWindow,
} from './ab-stats.js';
import { insertEchoStreamModel } from './fixtures.js';
import { repoRoot } from '../services.js';
import { loadavg, treeCommit } from './tree.js';
import {
  markName,
  muLawFrameBase64,
  twilioConnected,
  twilioIds,
  twilioMark,
  twilioMedia,
  twilioOutboundKind,
  twilioStart,
  twilioStop,
  type TwilioIds,
} from './twilio-stream.js';

const env = process.env;
const IS_WORKER = env.BENCH_LOAD_WORKER === '1';
const { values: opt } = parseArgs({
  args: IS_WORKER ? [] : process.argv.slice(2),
  options: Object.fromEntries(
    [
      'sessions',
      'seconds',
      'warmup',
      'rounds',
      'idle',
      'nice',
      'workers',
      'relays',
      'dialect',
      'prime',
      'compare',
      'compare-out',
      'mode',
      'peers',
    ].map((k) => [k, { type: 'string' as const }]),
  ),
});
const SESSIONS = (opt.sessions ?? env.BENCH_SESSIONS ?? '50,100,200').split(',').map(Number);
const SECONDS = Number(opt.seconds ?? env.BENCH_SECONDS ?? 10);
const WARMUP_SECONDS = Number(opt.warmup ?? env.BENCH_WARMUP ?? 3);
const IDLE = Number(opt.idle ?? env.BENCH_IDLE ?? 300);
// A relay in production runs for hours on code TurboFan has optimized. A fresh relay does not: perf of the relay
// in the measured window of the first N showed V8's compile threads at 12.8 µs per frame (15 % of its samples in
// the first 8 s of load, 4.6 % after), the pass-through's far less code at 0.04 µs. Without a priming phase the
// first N (50) carried the relay's JIT warm-up and the later ones did not (git log -p docs/benchmarks.md, 2026-11-27).
const PRIME_SECONDS = Number(opt.prime ?? env.BENCH_PRIME ?? 10);
// Each N runs ROUNDS times (direct, baseline, relay interleaved); the table gives the median of each figure.
const ROUNDS = Number(opt.rounds ?? env.BENCH_ROUNDS ?? 3);
const NICE = opt.nice ?? env.BENCH_NICE;
const WORKERS = Number(opt.workers ?? env.BENCH_WORKERS ?? 0);
const RELAYS = Math.max(1, Number(opt.relays ?? env.BENCH_RELAYS ?? 1));
const DIALECT = (opt.dialect ?? env.BENCH_DIALECT ?? 'svc-realtime-v1') === 'openai' ? 'openai' : 'svc-realtime-v1';
// The tree whose relay this run compares with its own (paired mode), and where the run's windows go.
const COMPARE = opt.compare ?? env.BENCH_COMPARE;
const COMPARE_OUT = opt['compare-out'] ?? env.BENCH_COMPARE_OUT;
// What the relay's sessions carry: PCM16 over its WebSocket (the default), a Twilio media stream per session
// (phone) or a WebRTC call per session (webrtc); the last two run against the PCM16 path in the same run.
const MODE = opt.mode ?? env.BENCH_MODE ?? 'pcm';
if (!['pcm', 'phone', 'webrtc'].includes(MODE)) throw new Error(`--mode=${MODE}: pcm, phone or webrtc`);
// The WebRTC mode's caller processes (webrtc-peers.ts) on the load core, and the relay's one UDP port for calls.
const PEERS = Math.max(1, Number(opt.peers ?? env.BENCH_PEERS ?? 1));
const WEBRTC_UDP_PORT = env.BENCH_WEBRTC_UDP_PORT ?? '19310';
// Servers (relays, proxies) on every core but the last; the simulator and the load on the last.
const CORES = availableParallelism();
const SERVER_CORES = Array.from({ length: Math.max(1, CORES - 1) }, (_, i) => i);
const LOAD_CORE = CORES - 1;
const FRAME_MS = 20;
const CLK_TCK = Number(execFileSync('getconf', ['CLK_TCK']).toString().trim()) || 100;
const root = repoRoot;

// ---- processes ----

interface Proc {
  child: ChildProcess;
  pid: number;
  port: number;
  /** Every later stdout line goes to these listeners. */
  onLine: Set<(line: string) => void>;
}

/** Starts `node --import tsx <script>` pinned to `core`; resolves with the port it reports. */
function startPinned(
  core: number,
  script: string,
  vars: Record<string, string>,
  portFrom: (line: string) => number | null,
  nodeArgs: string[] = [],
  cwd = root,
): Promise<Proc> {
  // BENCH_NICE (e.g. -10) raises the priority of every benchmark process on a machine shared with other work.
  const nice = NICE ? ['nice', '-n', NICE] : [];
  const gcHook = ['--expose-gc', '--import', `${root}bench/relay/gc-hook.ts`];
  const [cmd, ...args] = [...nice, 'taskset', '-c', String(core), process.execPath, ...nodeArgs, '--import', 'tsx', ...gcHook, script];
  const child = spawn(cmd as string, args, {
    cwd,
    env: { ...env, ...vars },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const onLine = new Set<(line: string) => void>();
  return new Promise((resolve, reject) => {
    let buf = '';
    const tee = env.BENCH_STDOUT_DIR ? createWriteStream(`${env.BENCH_STDOUT_DIR}/${script.split('/').pop()}-${child.pid}.out`) : null;
    child.stdout!.on('data', (c: Buffer) => {
      tee?.write(c);
      buf += c.toString();
      let nl: number;
      while ((nl = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        for (const f of onLine) f(line);
        const port = portFrom(line);
        if (port !== null) resolve({ child, pid: child.pid!, port, onLine });
      }
    });
    child.once('exit', (code) => reject(new Error(`${script} exited (${code})`)));
  });
}

function jsonPort(message: string): (line: string) => number | null {
  return (line) => {
    try {
      const o = JSON.parse(line) as { msg?: string; port?: number };
      return (message === '' || o.msg === message) && typeof o.port === 'number' ? o.port : null;
    } catch {
      return null;
    }
  };
}

/** user and system CPU seconds of a process (all its threads), from /proc. */
function cpuTimes(pid: number): { user: number; system: number } {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return { user: Number(fields[11]) / CLK_TCK, system: Number(fields[12]) / CLK_TCK };
}

// ---- load ----

type Mode = 'direct' | 'baseline' | 'relay';

interface Conn {
  ws: WebSocket;
  dial: Dial;
  sent: number;
  received: number;
  /** Send times (ms, hrtime) of frames still awaiting their echo, in order. */
  inflight: number[];
  head: number;
  timer: NodeJS.Timeout | null;
}

const DELTA_TYPE = Buffer.from('"response.output_audio.delta"');
const now = () => performance.now();
/** CLOCK_MONOTONIC in seconds, the clock of `perf record -k CLOCK_MONOTONIC` (perf script's times). */
const monotonicSeconds = () => Number(process.hrtime.bigint()) / 1e9;

/** One connection's protocol: how to open it and what says it is ready. */
interface Dial {
  url: string;
  protocols: string[];
  secret: string | null;
  readyType: string;
  /** A Twilio media stream (the phone mode): its ids; `secret` goes in its start, not in a header. */
  twilio?: TwilioIds;
}

function frameMessage(withEventId: boolean): string {
  const pcm = Buffer.alloc(FRAME_MS * BYTES_PER_MS);
  for (let i = 0; i < pcm.length / 2; i++) pcm.writeInt16LE(Math.round(3000 * Math.sin((2 * Math.PI * 440 * i) / 24000)), i * 2);
  // The relay's client protocols and the upstream protocol share this event; event ids differ in kind only.
  return JSON.stringify({ type: 'input_audio_buffer.append', ...(withEventId ? { event_id: 'f' } : {}), audio: pcm.toString('base64') });
}

/** An output audio delta in either dialect (the type is within its first bytes). */
function isDelta(data: Buffer): boolean {
  return data.subarray(0, 48).includes(DELTA_TYPE);
}

/** Opens one session's socket and resolves when it is ready for audio. */
function open(dial: Dial, latencies: { push(v: number): void; recording: boolean }): Promise<Conn> {
  const twilio = dial.twilio;
  const ws = new WebSocket(dial.url, dial.protocols, {
    perMessageDeflate: false,
    headers: dial.secret && !twilio ? { Authorization: `Bearer ${dial.secret}` } : {},
  });
  const conn: Conn = { ws, dial, sent: 0, received: 0, inflight: [], head: 0, timer: null };
  return new Promise((resolve, reject) => {
    let ready = false;
    if (twilio) {
      // Twilio speaks first and is never told it is attached: the relay holds what comes while it checks the secret.
      ws.once('open', () => {
        ws.send(twilioConnected());
        ws.send(twilioStart(twilio, dial.secret ?? ''));
        ready = true;
        resolve(conn);
      });
    }
    ws.on('message', (data: Buffer) => {
      if (twilio) {
        const kind = twilioOutboundKind(data);
        // A mark comes back once what was sent before it has played (here: at once, as a player with no buffer).
        if (kind === 'mark') ws.send(twilioMark(twilio, conn.sent + 2, markName(data)));
        if (kind !== 'media') return;
      }
      if (twilio || isDelta(data)) {
        const t0 = conn.inflight[conn.head++];
        conn.received++;
        if (t0 !== undefined && latencies.recording) latencies.push(now() - t0);
        if (conn.head > 1024) {
          conn.inflight = conn.inflight.slice(conn.head);
          conn.head = 0;
        }
        return;
      }
      if (!ready && data.includes(dial.readyType)) {
        ready = true;
        resolve(conn);
      }
    });
    ws.on('error', reject);
    ws.on('unexpected-response', (_q, res) => reject(new Error(`refused: ${res.statusCode}`)));
  });
}

class Samples {
  private data = new Float64Array(1 << 16);
  private n = 0;
  recording = false;
  push(v: number): void {
    if (this.n === this.data.length) {
      const bigger = new Float64Array(this.data.length * 2);
      bigger.set(this.data);
      this.data = bigger;
    }
    this.data[this.n++] = v;
  }
  values(): Float64Array {
    return this.data.slice(0, this.n);
  }
}

function percentile(sorted: Float64Array, p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN;
}

/** What one share of the load sends: its connections, spread over the frame period at `offsets`. */
interface Share {
  dials: Dial[];
  offsetsMs: number[];
  message: string;
}

/**
 * One share of the sessions, run in this process or in a load worker: open, go (frames every 20 ms),
 * record (latencies from now on), stop (no more frames; every frame sent must come back), close.
 */
class Load {
  private readonly samples = new Samples();
  private conns: Conn[] = [];
  private recv0 = 0;

  async open(share: Share): Promise<void> {
    this.conns = [];
    for (let i = 0; i < share.dials.length; i += 50) {
      this.conns.push(...(await Promise.all(share.dials.slice(i, i + 50).map((d) => open(d, this.samples)))));
    }
    this.conns.forEach((c, i) => {
      c.timer = setTimeout(() => {
        const twilio = c.dial.twilio;
        const send = twilio
          ? () => {
              c.inflight.push(now());
              c.ws.send(twilioMedia(twilio, c.sent++, share.message));
            }
          : () => {
              c.inflight.push(now());
              c.sent++;
              c.ws.send(share.message);
            };
        send();
        c.timer = setInterval(send, FRAME_MS);
      }, share.offsetsMs[i]);
    });
  }

  record(): void {
    this.recv0 = this.conns.reduce((s, c) => s + c.received, 0);
    this.samples.recording = true;
  }

  async stop(): Promise<{ frames: number; lost: number; latencies: Float64Array }> {
    this.samples.recording = false;
    const frames = this.conns.reduce((s, c) => s + c.received, 0) - this.recv0;
    for (const c of this.conns) if (c.timer) clearInterval(c.timer);
    const deadline = now() + 5000;
    while (now() < deadline && this.conns.some((c) => c.received < c.sent)) await sleep(20);
    const lost = this.conns.reduce((s, c) => s + (c.sent - c.received), 0);
    // A phone call ends with Twilio's stop (the relay ends and settles the session).
    for (const c of this.conns) if (c.dial.twilio && c.ws.readyState === WebSocket.OPEN) c.ws.send(twilioStop(c.dial.twilio, c.sent + 2));
    await Promise.all(this.conns.map((c) => closeWs(c.ws)));
    return { frames, lost, latencies: this.samples.values() };
  }

  /** Attached and idle (the memory test): open only. */
  async attach(dials: Dial[]): Promise<void> {
    this.conns = [];
    for (let i = 0; i < dials.length; i += 50) {
      this.conns.push(...(await Promise.all(dials.slice(i, i + 50).map((d) => open(d, this.samples)))));
    }
  }

  async close(): Promise<void> {
    await Promise.all(this.conns.map((c) => closeWs(c.ws)));
    this.conns = [];
  }
}

/** The same Load in a child process (`--workers`), driven over IPC. */
class RemoteLoad {
  private seq = 0;
  private readonly waiting = new Map<number, (v: unknown) => void>();

  readonly pid: number;

  constructor(private readonly child: ChildProcess) {
    this.pid = child.pid!;
    // A worker that dies fails the run instead of leaving its caller waiting.
    child.once('exit', (code) => {
      for (const resolve of this.waiting.values()) resolve(Promise.reject(new Error(`load worker ${this.pid} exited (${code})`)));
      this.waiting.clear();
    });
    child.on('message', (m: { id: number; result: unknown }) => {
      this.waiting.get(m.id)?.(m.result);
      this.waiting.delete(m.id);
    });
  }

  private call<T>(cmd: string, arg?: unknown): Promise<T> {
    const id = ++this.seq;
    return new Promise((resolve) => {
      this.waiting.set(id, resolve as (v: unknown) => void);
      this.child.send({ id, cmd, arg });
    });
  }

  open(share: Share): Promise<void> {
    return this.call('open', share);
  }
  record(): Promise<void> {
    return this.call('record');
  }
  async stop(): Promise<{ frames: number; lost: number; latencies: Float64Array }> {
    const r = await this.call<{ frames: number; lost: number; latencies: number[] }>('stop');
    return { ...r, latencies: Float64Array.from(r.latencies) };
  }
}

/** A load worker process: runs one Load for its parent. */
function serveAsWorker(): void {
  const load = new Load();
  process.on('message', (m: { id: number; cmd: string; arg: unknown }) => {
    const reply = (result: unknown) => process.send?.({ id: m.id, result });
    const run = async (): Promise<unknown> => {
      if (m.cmd === 'open') return load.open(m.arg as Share);
      if (m.cmd === 'record') return load.record();
      const r = await load.stop();
      return { frames: r.frames, lost: r.lost, latencies: Array.from(r.latencies) };
    };
    run().then(reply, (err: unknown) => {
      process.stderr.write(`load worker: ${String(err)}\n`);
      process.exit(1);
    });
  });
}

/** Processes on the load core besides the load generators (the simulator), for LoadResult.loadCore. */
const loadCorePids: number[] = [];

/**
 * The load generators of a run: this process, or `--workers` child processes on the load core; with `script`,
 * `count` processes of that script (webrtc-peers.ts) speaking the load workers' IPC.
 */
function loadGenerators(procs: ChildProcess[], script?: string, count = WORKERS): (Load | RemoteLoad)[] {
  if (count <= 0) return [new Load()];
  return Array.from({ length: count }, () => {
    const child = fork(script ?? fileURLToPath(import.meta.url), [], {
      env: { ...env, BENCH_LOAD_WORKER: '1' },
      execArgv: process.execArgv,
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    execFileSync('taskset', ['-pc', String(LOAD_CORE), String(child.pid)], { stdio: 'ignore' });
    if (NICE) execFileSync('renice', ['-n', NICE, '-p', String(child.pid)], { stdio: 'ignore' });
    procs.push(child);
    return new RemoteLoad(child);
  });
}

interface LoadResult {
  mode: Mode;
  sessions: number;
  framesPerSecond: number;
  cpuUsPerFrame: number | null;
  /** Share of that CPU spent in the kernel. */
  systemShare: number | null;
  /** Main-thread sleeps (event-loop turns that waited) per frame. */
  sleepsPerFrame: number | null;
  /** CPU of the load core's processes (load generators and simulator) ÷ the window: 1 is that core saturated. */
  loadCore: number;
  p50: number;
  p99: number;
  lost: number;
}

/**
 * Times the main thread of a process blocked (voluntary context switches): an event loop sleeps in epoll
 * when nothing is ready, so this counts its turns that waited for I/O. At N = 50 a frame's CPU depends on how
 * many frames a turn carries (git log -p docs/benchmarks.md, 2026-11-27, the unprimed N = 50), which this shows.
 */
function mainThreadSleeps(pid: number): number {
  const status = readFileSync(`/proc/${pid}/task/${pid}/status`, 'utf8');
  return Number(/^voluntary_ctxt_switches:\s+(\d+)/m.exec(status)?.[1] ?? NaN);
}

/** CPU seconds (user + system) of several processes, the system part, and their main threads' sleeps. */
function cpuOf(pids: number[]): { total: number; system: number; sleeps: number } {
  let total = 0;
  let system = 0;
  let sleeps = 0;
  for (const pid of pids) {
    const c = cpuTimes(pid);
    total += c.user + c.system;
    system += c.system;
    sleeps += mainThreadSleeps(pid);
  }
  return { total, system, sleeps };
}

type Timing = { warmup: number; measure: number };

async function runLoad(
  gens: (Load | RemoteLoad)[],
  mode: Mode,
  sessions: number,
  dialFor: (i: number) => Dial,
  message: string,
  pids: number[],
  timing: { warmup: number; measure: number } = { warmup: WARMUP_SECONDS, measure: SECONDS },
): Promise<LoadResult> {
  // Sessions are spread evenly over the 20 ms frame period, as independent clients would be, and dealt
  // round-robin to the load generators.
  const shares: Share[] = gens.map(() => ({ dials: [], offsetsMs: [], message }));
  for (let i = 0; i < sessions; i++) {
    const share = shares[i % gens.length] as Share;
    share.dials.push(dialFor(i));
    share.offsetsMs.push((i * FRAME_MS) / sessions);
  }
  await Promise.all(gens.map((g, k) => g.open(shares[k] as Share)));
  await sleep(timing.warmup * 1000);
  const loadPids = [...new Set([...gens.map((g) => (g instanceof RemoteLoad ? g.pid : process.pid)), ...loadCorePids])];
  const load0 = cpuOf(loadPids);
  const cpu0 = cpuOf(pids);
  await Promise.all(gens.map((g) => g.record()));
  const t0 = now();
  const mono0 = monotonicSeconds();
  await sleep(timing.measure * 1000);
  const cpu1 = cpuOf(pids);
  const load1 = cpuOf(loadPids);
  const elapsed = (now() - t0) / 1000;
  if (env.BENCH_DEBUG) {
    const window = { mode, sessions, pids, from: mono0, to: monotonicSeconds() };
    process.stderr.write(`${JSON.stringify({ bench_window: window })}\n`);
  }
  const results = await Promise.all(gens.map((g) => g.stop()));
  const frames = results.reduce((s, r) => s + r.frames, 0);
  const all = new Float64Array(results.reduce((s, r) => s + r.latencies.length, 0));
  let at = 0;
  for (const r of results) {
    all.set(r.latencies, at);
    at += r.latencies.length;
  }
  all.sort();
  const cpu = cpu1.total - cpu0.total;
  return {
    mode,
    sessions,
    framesPerSecond: frames / elapsed,
    cpuUsPerFrame: pids.length ? (cpu * 1e6) / frames : null,
    systemShare: pids.length ? (cpu1.system - cpu0.system) / cpu : null,
    sleepsPerFrame: pids.length ? (cpu1.sleeps - cpu0.sleeps) / frames : null,
    loadCore: (load1.total - load0.total) / elapsed,
    p50: percentile(all, 50),
    p99: percentile(all, 99),
    lost: results.reduce((s, r) => s + r.lost, 0),
  };
}

function closeWs(ws: WebSocket): Promise<void> {
  return new Promise((resolve) => {
    if (ws.readyState === WebSocket.CLOSED) return resolve();
    ws.once('close', () => resolve());
    ws.close(1000);
    setTimeout(() => {
      ws.terminate();
      resolve();
    }, 2000).unref();
  });
}

interface Memory {
  rss: number;
  heapUsed: number;
  external: number;
}

/** Memory of a process right after a full GC (see gc-hook.ts). */
function settledMemory(proc: Proc): Promise<Memory> {
  return new Promise((resolve) => {
    const listener = (line: string) => {
      if (!line.startsWith('{"bench_memory"')) return;
      proc.onLine.delete(listener);
      resolve((JSON.parse(line) as { bench_memory: Memory }).bench_memory);
    };
    proc.onLine.add(listener);
    process.kill(proc.pid, 'SIGUSR2');
  });
}

interface IdleMemory {
  /** RSS growth per session the first time `count` sessions attach (heap growth for attaching included). */
  coldRss: number;
  /** RSS growth per session when they attach again, the heap already sized for it. */
  warmRss: number;
  /** JS heap + external memory the idle sessions retain, per session. */
  retained: number;
}

/** Memory per idle attached session: attach `count` sessions twice (cold, then warm), settled by a full GC. */
async function idleMemory(mode: Mode, count: number, dialFor: (i: number) => Dial, proc: Proc): Promise<IdleMemory> {
  const dials = Array.from({ length: count }, (_, i) => dialFor(i));
  await sleep(3000);
  const cold0 = await settledMemory(proc);
  const first = new Load();
  await first.attach(dials);
  await sleep(1500);
  const cold1 = await settledMemory(proc);
  await first.close();
  // Closed upstream sockets stay referenced by their 2 s close-timeout timers (the adapters').
  await sleep(3000);
  const warm0 = await settledMemory(proc);
  const second = new Load();
  await second.attach(dials);
  await sleep(1500);
  const warm1 = await settledMemory(proc);
  await second.close();
  if (env.BENCH_DEBUG) process.stderr.write(`${mode} memory: ${JSON.stringify({ cold0, cold1, warm0, warm1 })}\n`);
  return {
    coldRss: (cold1.rss - cold0.rss) / count,
    warmRss: (warm1.rss - warm0.rss) / count,
    retained: (warm1.heapUsed + warm1.external - warm0.heapUsed - warm0.external) / count,
  };
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? (s[mid] as number) : ((s[mid - 1] as number) + (s[mid] as number)) / 2;
}

/** Figure by figure medians over rounds (lost frames: the total). */
function medianOf(runs: LoadResult[]): LoadResult {
  const first = runs[0] as LoadResult;
  return {
    mode: first.mode,
    sessions: first.sessions,
    framesPerSecond: median(runs.map((r) => r.framesPerSecond)),
    cpuUsPerFrame: first.cpuUsPerFrame === null ? null : median(runs.map((r) => r.cpuUsPerFrame ?? NaN)),
    systemShare: first.systemShare === null ? null : median(runs.map((r) => r.systemShare ?? NaN)),
    sleepsPerFrame: first.sleepsPerFrame === null ? null : median(runs.map((r) => r.sleepsPerFrame ?? NaN)),
    loadCore: median(runs.map((r) => r.loadCore)),
    p50: median(runs.map((r) => r.p50)),
    p99: median(runs.map((r) => r.p99)),
    lost: runs.reduce((s, r) => s + r.lost, 0),
  };
}

function fmtRun(r: LoadResult): string {
  return `${r.cpuUsPerFrame?.toFixed(1)} us/frame (${((r.systemShare ?? 0) * 100).toFixed(0)}% system, ${r.sleepsPerFrame?.toFixed(2)} sleeps), p50 ${r.p50.toFixed(2)} p99 ${r.p99.toFixed(2)} ms, ${r.framesPerSecond.toFixed(0)} frames/s, lost ${r.lost}, load core ${r.loadCore.toFixed(2)}`;
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

// ---- paired mode (--compare) ----

interface PairedSetup {
  startRelay: (k: number, tree?: string) => Promise<Proc>;
  startProxy: (k: number) => Promise<Proc>;
  relayDial: (relays: Proc[], first?: number) => (i: number) => Dial;
  proxyDial: (proxies: Proc[]) => (i: number) => Dial;
  relayMessage: string;
  plainMessage: string;
  procs: ChildProcess[];
  maxN: number;
}

/** This tree's relay against `otherTree`'s, with the pass-through, in alternated windows of one run. */
async function comparePaired(setup: PairedSetup, otherTree: string): Promise<void> {
  const startedAt = new Date().toISOString().slice(0, 19) + 'Z';
  const loadStart = loadavg();
  const servers: Record<PairedSide, Proc[]> = { bare: [], this: [], other: [] };
  for (let k = 0; k < RELAYS; k++) {
    servers.this.push(await setup.startRelay(k));
    servers.other.push(await setup.startRelay(k, `${otherTree}/`));
    servers.bare.push(await setup.startProxy(k));
  }
  const gens = loadGenerators(setup.procs);
  const dial: Record<PairedSide, (i: number) => Dial> = {
    bare: setup.proxyDial(servers.bare),
    this: setup.relayDial(servers.this, 0),
    other: setup.relayDial(servers.other, setup.maxN),
  };
  const message = (side: PairedSide) => (side === 'bare' ? setup.plainMessage : setup.relayMessage);
  const runWindow = (side: PairedSide, n: number, timing?: { warmup: number; measure: number }, measured = true) =>
    runLoad(
      gens,
      side === 'bare' ? 'baseline' : 'relay',
      n,
      dial[side],
      message(side),
      measured ? servers[side].map((p) => p.pid) : [],
      timing,
    );
  if (PRIME_SECONDS > 0) {
    // As the unpaired prime, for both relays alike: a short pass whose sockets close, then a full one.
    const n = SESSIONS[0] as number;
    const prime = { warmup: 0, measure: PRIME_SECONDS };
    for (const side of ['this', 'other'] as const) await runWindow(side, n, { warmup: 0, measure: Math.min(2, PRIME_SECONDS) }, false);
    for (const side of ['bare', 'this', 'other'] as const) await runWindow(side, n, prime, false);
  }
  const windows: PairedWindow[] = [];
  for (const n of SESSIONS) {
    for (let round = 0; round < ROUNDS; round++) {
      const got: string[] = [];
      for (const side of roundOrder(round)) {
        const r = await runWindow(side, n);
        windows.push({ n, round, side, cpu: r.cpuUsPerFrame ?? NaN, fps: r.framesPerSecond, lost: r.lost });
        got.push(`${side} ${r.cpuUsPerFrame?.toFixed(1)} µs (${r.framesPerSecond.toFixed(0)} frames/s, lost ${r.lost})`);
      }
      process.stderr.write(`N=${n} round ${round + 1}: ${got.join(', ')}\n`);
    }
  }
  const record: PairedRecord = {
    kind: 'paired',
    thisTree: { dir: root.replace(/\/$/, ''), commit: treeCommit(root) },
    otherTree: { dir: otherTree, commit: treeCommit(otherTree) },
    procedure:
      `sessions=${SESSIONS.join(',')} rounds=${ROUNDS} seconds=${SECONDS} warmup=${WARMUP_SECONDS} prime=${PRIME_SECONDS} ` +
      `relays=${RELAYS} workers=${WORKERS} dialect=${DIALECT}${NICE ? ` nice=${NICE}` : ''}`,
    startedAt,
    endedAt: new Date().toISOString().slice(0, 19) + 'Z',
    loadStart,
    loadEnd: loadavg(),
    windows,
  };
  if (COMPARE_OUT) appendFileSync(COMPARE_OUT, `${JSON.stringify(record)}\n`);

  const f = (v: number, d = 3) => (Number.isFinite(v) ? v.toFixed(d) : 'n/a');
  const lines = [
    `Paired: this ${record.thisTree.commit} (${record.thisTree.dir}) against other ${record.otherTree.commit} (${otherTree}); ` +
      `per N ${ROUNDS} rounds of a pass-through, this-relay and other-relay window each (palindromic order), ${SECONDS} s measured ` +
      `after ${WARMUP_SECONDS} s warm-up per window${PRIME_SECONDS > 0 ? `; both relays and the proxy primed ${PRIME_SECONDS} s at N = ${SESSIONS[0]} first` : ''}; ` +
      `dialect ${DIALECT}; ${RELAYS} relay(s) per tree and ${RELAYS} proxy(ies) on core(s) ${SERVER_CORES.join(',')}, simulator and load on core ${LOAD_CORE}; ` +
      `Node ${process.version}${NICE ? `; nice ${NICE}` : ''}; load ${f(loadStart, 2)} → ${f(record.loadEnd, 2)}.`,
    '',
    '| N | rounds | CPU µs per frame bare / this / other (geometric means) | this ÷ bare | other ÷ bare | this ÷ other | 95 % within this run | SD of ln(this ÷ other) per round | frames/s ÷ bare, lowest this / other | frames lost bare / this / other |',
    '|---|---|---|---|---|---|---|---|---|---|',
  ];
  for (const n of SESSIONS) {
    const of = (side: PairedSide) => windows.filter((w) => w.n === n && w.side === side);
    const geo = (side: PairedSide) => Math.exp(mean(of(side).map((w) => Math.log(w.cpu))));
    const lowestFps = (side: PairedSide) =>
      Math.min(...of(side).map((w) => w.fps / (windows.find((b) => b.n === n && b.round === w.round && b.side === 'bare')?.fps ?? NaN)));
    const lost = (side: PairedSide) => of(side).reduce((s, w) => s + w.lost, 0);
    const sum = pairedSummary([record], n);
    const run = sum.runs[0];
    lines.push(
      `| N = ${n} | ${run?.thisOther.count ?? 0} | ${f(geo('bare'), 1)} / ${f(geo('this'), 1)} / ${f(geo('other'), 1)} | ${f(sum.thisBare)} | ` +
        `${f(sum.otherBare)} | **${f(sum.pooled.estimate)}** | ${f(sum.pooled.low)}–${f(sum.pooled.high)} | ${f(sum.sdPerWindow)} | ` +
        `${f(lowestFps('this'))} / ${f(lowestFps('other'))} | ${lost('bare')} / ${lost('this')} / ${lost('other')} |`,
    );
  }
  lines.push(
    '',
    "The within-run interval speaks for this run's two relay processes only; across runs (fresh processes, other JIT states) " +
      'pool runs with `npx tsx bench/relay/ab.ts --paired --pool=<file.jsonl>`.',
  );
  process.stdout.write(`${lines.join('\n')}\n`);
}

// ---- modes against the PCM16 path (--mode=phone, --mode=webrtc) ----

/** One side of a mode run: a window of `n` sessions, the CPU of `pids` measured (none: unmeasured). */
type WindowRunner = (n: number, timing: { warmup: number; measure: number } | undefined, measured: boolean) => Promise<LoadResult>;

interface ModeSetup {
  /** The mode's name in the output, what one of its sessions is, and its unit of work. */
  label: string;
  sessions: string;
  /** The pass-through, the relay's PCM16 WebSocket sessions, and the mode's sessions through the same relay. */
  bare: WindowRunner;
  pcm: WindowRunner;
  mode: WindowRunner;
  /**
   * The mode's goals (docs/benchmarks.md): CPU per frame ÷ PCM16's, and p99 added over PCM16's; with `p99OverPcm`
   * the output also names the largest N that met it with none lost at the nominal rate (sessions per relay core).
   */
  goals: { cpuRatio?: number; p99OverPcm?: number };
  /** The direct connection's round trip, for "added" over the simulator alone. */
  direct: WindowRunner;
  relayCores: number;
}

interface ModeWindow extends PairedWindow {
  p50: number;
  p99: number;
  loadCore: number;
}

/**
 * The mode's sessions against the relay's PCM16 WebSocket sessions and the pass-through, through the same relay
 * in alternated windows of one run (palindromic order, `roundOrder`: "this" is the mode, "other" PCM16), after
 * one direct window per round for the simulator's own round trip. Per N: CPU per frame of each, the mode ÷ PCM16
 * with its within-run interval, p50 and p99 added over PCM16's and over the direct connection's.
 */
async function compareModes(setup: ModeSetup): Promise<void> {
  const loadStart = loadavg();
  const run: Record<PairedSide, WindowRunner> = { bare: setup.bare, other: setup.pcm, this: setup.mode };
  if (PRIME_SECONDS > 0) {
    const n = SESSIONS[0] as number;
    const prime = { warmup: 0, measure: PRIME_SECONDS };
    for (const side of ['other', 'this'] as const) await run[side](n, { warmup: 0, measure: Math.min(2, PRIME_SECONDS) }, false);
    for (const side of ['bare', 'other', 'this'] as const) await run[side](n, prime, false);
  }
  const windows: ModeWindow[] = [];
  const directs: { n: number; p50: number; p99: number }[] = [];
  for (const n of SESSIONS) {
    for (let round = 0; round < ROUNDS; round++) {
      const d = await setup.direct(n, undefined, false);
      directs.push({ n, p50: d.p50, p99: d.p99 });
      const got: string[] = [`direct p50 ${d.p50.toFixed(2)} p99 ${d.p99.toFixed(2)}`];
      for (const side of roundOrder(round)) {
        const r = await run[side](n, undefined, true);
        windows.push({
          n,
          round,
          side,
          cpu: r.cpuUsPerFrame ?? NaN,
          fps: r.framesPerSecond,
          lost: r.lost,
          p50: r.p50,
          p99: r.p99,
          loadCore: r.loadCore,
        });
        got.push(`${side === 'this' ? setup.label : side === 'other' ? 'PCM16' : 'bare'} ${fmtRun(r)}`);
      }
      process.stderr.write(`N=${n} round ${round + 1}: ${got.join('; ')}\n`);
    }
  }

  const f = (v: number, d = 2) => (Number.isFinite(v) ? v.toFixed(d) : 'n/a');
  const lines = [
    `${setup.label} against PCM16 through the same relay (${treeCommit(root)}): per N ${ROUNDS} rounds of a direct window, then a pass-through, ` +
      `PCM16 and ${setup.label} window (palindromic order); ${SECONDS} s measured after ${WARMUP_SECONDS} s warm-up per window` +
      `${PRIME_SECONDS > 0 ? `; relay and proxy primed ${PRIME_SECONDS} s at N = ${SESSIONS[0]} first` : ''}; ${setup.sessions}; ` +
      `relay and proxy on core(s) ${SERVER_CORES.join(',')}, simulator and load on core ${LOAD_CORE}; Node ${process.version}` +
      `${NICE ? `; nice ${NICE}` : ''}; load ${f(loadStart)} → ${f(loadavg())}.`,
    '',
    `| N | CPU µs per frame bare / PCM16 / ${setup.label} | PCM16 ÷ bare | ${setup.label} ÷ bare | ${setup.label} ÷ PCM16 (95 % within run) | ` +
      `CPU ms per session-second PCM16 / ${setup.label} | p50 added over PCM16 | p99 added over PCM16 | p99 added over direct, PCM16 / ${setup.label} | ` +
      `frames/s ÷ PCM16's, lowest | frames lost PCM16 / ${setup.label} | load core busy, PCM16 / ${setup.label} |`,
    '|---|---|---|---|---|---|---|---|---|---|---|---|',
  ];
  const held: number[] = [];
  for (const n of SESSIONS) {
    const of = (side: PairedSide) => windows.filter((w) => w.n === n && w.side === side);
    const geo = (side: PairedSide) => Math.exp(mean(of(side).map((w) => Math.log(w.cpu))));
    const logs = roundLogRatios(windows, n);
    const ratio = expMeanInterval(logs.thisOther);
    // Latency: per round, the mode's percentile less PCM16's (and less the direct window's); the median of rounds.
    const perRound = (k: 'p50' | 'p99', base: (round: number) => number) => median(of('this').map((w) => w[k] - base(w.round)));
    const pcmOf = (k: 'p50' | 'p99') => (round: number) => of('other').find((w) => w.round === round)?.[k] ?? NaN;
    const directOf = (round: number) => directs.filter((d) => d.n === n)[round]?.p99 ?? NaN;
    const overPcm50 = perRound('p50', pcmOf('p50'));
    const overPcm99 = perRound('p99', pcmOf('p99'));
    const added99 = perRound('p99', directOf);
    const pcmAdded99 = median(of('other').map((w) => w.p99 - directOf(w.round)));
    const fps = Math.min(...of('this').map((w) => w.fps / (of('other').find((o) => o.round === w.round)?.fps ?? NaN)));
    const lost = (side: PairedSide) => of(side).reduce((s, w) => s + w.lost, 0);
    // CPU per session-second: per frame × frames a second ÷ sessions (each session 50 frames/s each way).
    const perSecond = (side: PairedSide) => median(of(side).map((w) => (w.cpu * w.fps) / n / 1000));
    const busy = (side: PairedSide) => median(of(side).map((w) => w.loadCore));
    if (setup.goals.p99OverPcm !== undefined && overPcm99 <= setup.goals.p99OverPcm && lost('this') === 0 && fps >= 0.98) held.push(n);
    lines.push(
      `| ${n} | ${f(geo('bare'), 1)} / ${f(geo('other'), 1)} / ${f(geo('this'), 1)} | ${f(Math.exp(mean(logs.otherBare)))} | ` +
        `${f(Math.exp(mean(logs.thisBare)))} | **${f(ratio.estimate)}** (${f(ratio.low)}–${f(ratio.high)}) | ` +
        `${f(perSecond('other'), 3)} / ${f(perSecond('this'), 3)} | ${f(overPcm50)} ms | ${f(overPcm99)} ms | ${f(pcmAdded99)} / ${f(added99)} ms | ` +
        `${f(fps)} | ${lost('other')} / ${lost('this')} | ${f(busy('other'))} / ${f(busy('this'))} |`,
    );
  }
  const g = setup.goals;
  lines.push('');
  if (g.cpuRatio !== undefined) lines.push(`Goal: ${setup.label} ÷ PCM16 ≤ ${g.cpuRatio} per frame.`);
  if (g.p99OverPcm !== undefined) {
    const cores = setup.relayCores;
    lines.push(
      held.length
        ? `${setup.label} sessions per relay core with p99 added over PCM16 ≤ ${g.p99OverPcm} ms, none lost, the nominal rate kept: ` +
            `${f(Math.max(...held) / cores, 0)} (largest such N ${Math.max(...held)} of ${SESSIONS.join(', ')}, ${cores} relay core(s)).`
        : `No N of ${SESSIONS.join(', ')} kept p99 added over PCM16 ≤ ${g.p99OverPcm} ms with none lost at the nominal rate.`,
      'Load core busy: CPU of the load generators and the simulator ÷ the window, in cores; near 1 the load core, not the relay, is the limit.',
    );
  }
  process.stdout.write(`${lines.join('\n')}\n`);
}

// ---- main ----

async function main(): Promise<void> {
  execFileSync('taskset', ['-pc', String(LOAD_CORE), String(process.pid)], { stdio: 'ignore' });
  if (NICE) execFileSync('renice', ['-n', NICE, '-p', String(process.pid)], { stdio: 'ignore' });
  const prefix = `bench_${randomBytes(3).toString('hex')}`;
  const testDb = await createTestDatabase();
  const procs: ChildProcess[] = [];
  const bus = await connectBus({ url: env.NATS_URL ?? 'nats://127.0.0.1:4222', prefix });
  try {
    const sim = await startPinned(
      LOAD_CORE,
      'services/local-provider/src/main.ts',
      { LOCAL_PROVIDER_PORT: '0', LOG_LEVEL: 'info' },
      jsonPort('local provider listening'),
    );
    procs.push(sim.child);
    loadCorePids.push(sim.pid);
    const simUrl = `ws://127.0.0.1:${sim.port}/v1/realtime`;
    const startRelay = async (k: number, tree = root): Promise<Proc> => {
      const p = await startPinned(
        SERVER_CORES[k % SERVER_CORES.length] as number,
        'services/relay/src/main.ts',
        {
          DATABASE_URL: testDb.url,
          BUS_PREFIX: prefix,
          RELAY_PORT: '0',
          LOCAL_PROVIDER_URL: simUrl,
          LOG_LEVEL: 'info',
          NODE_ENV: 'production',
          // Calls (the WebRTC mode) on one UDP port of the loopback, announced as such.
          ...(MODE === 'webrtc'
            ? { WEBRTC_UDP_PORT: String(Number(WEBRTC_UDP_PORT) + k), WEBRTC_HOST: '127.0.0.1', WEBRTC_ANNOUNCED_ADDRESSES: '127.0.0.1' }
            : {}),
        },
        jsonPort('relay listening'),
        env.BENCH_RELAY_NODE_ARGS ? env.BENCH_RELAY_NODE_ARGS.split(' ') : [],
        tree,
      );
      procs.push(p.child);
      return p;
    };
    const startProxy = async (k: number): Promise<Proc> => {
      const p = await startPinned(
        SERVER_CORES[k % SERVER_CORES.length] as number,
        'bench/relay/passthrough.ts',
        { TARGET_URL: simUrl },
        jsonPort(''),
        env.BENCH_PROXY_NODE_ARGS ? env.BENCH_PROXY_NODE_ARGS.split(' ') : [],
      );
      procs.push(p.child);
      return p;
    };
    const stop = async (p: Proc): Promise<void> => {
      p.child.kill('SIGTERM');
      await new Promise((r) => (p.child.exitCode !== null ? r(null) : p.child.once('exit', r)));
    };

    // Fixtures: one big wallet, one echo-stream model, enough sessions for the largest run and the idle test.
    const db = testDb.db;
    const key = await createWalletAndKey(db.pool, { balanceCents: 1_000_000_000 });
    const { walletId, keyId } = key;
    await insertEchoStreamModel(db);
    const maxN = Math.max(...SESSIONS);
    /** A session; `minted`: as POST /v1/realtime/client_secrets makes it (the phone and WebRTC modes' callers). */
    const newSession = async (minted = false): Promise<string> => {
      const { session } = await createSession({
        ctx: { db },
        input: {
          key: { keyId, walletId },
          request: { model: 'local/echo-stream', mode: 'speech_to_speech' },
          ...(minted ? { clientSecretSettings: {} } : {}),
          traceId: randomBytes(16).toString('hex'),
          policy: { preauthMinutes: 120, idleTimeoutSeconds: 3600, maxSeconds: 7200 },
        },
      });
      return session.id;
    };
    const sessionIds: string[] = [];
    // Paired mode: the other tree's relay attaches its own maxN sessions, so that no session is shared.
    for (let i = 0; i < (COMPARE ? 2 * maxN : MODE !== 'pcm' ? maxN : Math.max(maxN, IDLE)); i++) sessionIds.push(await newSession());

    // svc-realtime-v1 attaches the sessions made above; the OpenAI dialect takes the legacy path, which
    // creates a session per socket (before the measured window).
    const relayDial =
      (relays: Proc[], first = 0) =>
      (i: number): Dial =>
        DIALECT === 'openai'
          ? {
              url: `ws://127.0.0.1:${relays[i % relays.length]!.port}/v1/realtime?model=local/echo-stream`,
              protocols: [],
              secret: key.secret,
              readyType: 'session.created',
            }
          : {
              url: `ws://127.0.0.1:${relays[i % relays.length]!.port}/v1/realtime?session_id=${sessionIds[first + i]}`,
              protocols: [REALTIME_PROTOCOL],
              secret: key.secret,
              readyType: 'conversation.created',
            };
    const proxyDial =
      (proxies: Proc[]) =>
      (i: number): Dial => ({
        url: `ws://127.0.0.1:${proxies[i % proxies.length]!.port}/v1/realtime?model=echo-stream`,
        protocols: [],
        secret: null,
        readyType: 'session.created',
      });
    const directDial = (): Dial => ({ url: `${simUrl}?model=echo-stream`, protocols: [], secret: null, readyType: 'session.created' });

    const relayMessage = frameMessage(true);
    const plainMessage = frameMessage(false);
    if (COMPARE) {
      const paired = { startRelay, startProxy, relayDial, proxyDial, relayMessage, plainMessage, procs, maxN };
      await comparePaired(paired, resolvePath(COMPARE));
      return;
    }
    if (MODE !== 'pcm') {
      const relays = [await startRelay(0)];
      const proxies = [await startProxy(0)];
      const gens = loadGenerators(procs);
      const pids = (measured: boolean, of: Proc[]) => (measured ? of.map((p) => p.pid) : []);
      const common = {
        bare: (n: number, timing: Timing | undefined, m: boolean) =>
          runLoad(gens, 'baseline', n, proxyDial(proxies), plainMessage, pids(m, proxies), timing),
        pcm: (n: number, timing: Timing | undefined, m: boolean) =>
          runLoad(gens, 'relay', n, relayDial(relays), relayMessage, pids(m, relays), timing),
        direct: (n: number, timing: Timing | undefined) => runLoad(gens, 'direct', n, directDial, plainMessage, [], timing),
        relayCores: 1,
      };
      // A phone stream or a call ends its session when it stops, so every window has N fresh sessions and secrets.
      const freshDials = async (n: number, dial: (i: number, secret: string) => Dial): Promise<Dial[]> => {
        const dials: Dial[] = [];
        for (let i = 0; i < n; i++) {
          const minted = await mintClientSecret({
            ctx: { db },
            input: { sessionId: await newSession(true), ttlSeconds: 600, now: new Date() },
          });
          dials.push(dial(i, minted.value));
        }
        return dials;
      };
      if (MODE === 'phone') {
        const payload = muLawFrameBase64();
        const phoneUrl = `ws://127.0.0.1:${relays[0]!.port}${TELEPHONY_PATHS.twilio}`;
        await compareModes({
          ...common,
          label: 'phone',
          sessions: 'call per session: a Twilio media stream, μ-law 8 kHz in 20 ms media messages, marks answered',
          mode: async (n, timing, m) => {
            const dials = await freshDials(n, (i, secret) => ({
              url: phoneUrl,
              protocols: [],
              secret,
              readyType: '',
              twilio: twilioIds(i),
            }));
            return runLoad(gens, 'relay', n, (i) => dials[i]!, payload, pids(m, relays), timing);
          },
          goals: { cpuRatio: 1.25, p99OverPcm: 2 },
        });
      } else {
        const callsUrl = `http://127.0.0.1:${relays[0]!.port}/v1/realtime/calls`;
        const peers = loadGenerators(procs, fileURLToPath(new URL('./webrtc-peers.ts', import.meta.url)), PEERS);
        await compareModes({
          ...common,
          label: 'WebRTC',
          sessions: `call per session: a werift peer in ${PEERS} caller process(es) on the load core, a 20 ms Opus packet each 20 ms, the oai-events channel`,
          mode: async (n, timing, m) => {
            const dials = await freshDials(n, (_, secret) => ({ url: callsUrl, protocols: [], secret, readyType: '' }));
            return runLoad(peers, 'relay', n, (i) => dials[i]!, '', pids(m, relays), timing);
          },
          goals: { p99OverPcm: 20 },
        });
      }
      return;
    }

    // Memory first, each round on a freshly started relay and proxy (issue 13: RSS per idle session cold).
    const mem: { relay: IdleMemory; baseline: IdleMemory }[] = [];
    for (let r = 0; r < ROUNDS && IDLE > 0; r++) {
      const freshProxy = await startProxy(0);
      const baseline = await idleMemory('baseline', IDLE, proxyDial([freshProxy]), freshProxy);
      await stop(freshProxy);
      const freshRelay = await startRelay(0);
      const relayMem = await idleMemory('relay', IDLE, relayDial([freshRelay]), freshRelay);
      await stop(freshRelay);
      mem.push({ baseline, relay: relayMem });
    }
    const memOf = (who: 'relay' | 'baseline', k: keyof IdleMemory) => median(mem.map((x) => x[who][k]));

    const relays: Proc[] = [];
    const proxies: Proc[] = [];
    for (let k = 0; k < RELAYS; k++) {
      relays.push(await startRelay(k));
      proxies.push(await startProxy(k));
    }
    const gens = loadGenerators(procs);

    if (PRIME_SECONDS > 0) {
      // Unmeasured: both servers run the first N's load once, so the JIT has done its work before any figure.
      const prime = { warmup: 0, measure: PRIME_SECONDS };
      const n = SESSIONS[0] as number;
      // First a short pass whose sockets close: a relay's first attachment end writes fields its hot path had
      // only read until then (on echo-stream the first response's usage is settled there), which deoptimizes
      // that path once, process-wide; the full pass then optimizes it again before any figure.
      await runLoad(gens, 'relay', n, relayDial(relays), relayMessage, [], { warmup: 0, measure: Math.min(2, PRIME_SECONDS) });
      await runLoad(gens, 'baseline', n, proxyDial(proxies), plainMessage, [], prime);
      await runLoad(gens, 'relay', n, relayDial(relays), relayMessage, [], prime);
    }

    const results: { n: number; direct: LoadResult; baseline: LoadResult; relay: LoadResult }[] = [];
    for (const n of SESSIONS) {
      const rounds: { direct: LoadResult; baseline: LoadResult; relay: LoadResult }[] = [];
      for (let r = 0; r < ROUNDS; r++) {
        const direct = await runLoad(gens, 'direct', n, directDial, plainMessage, []);
        const baseline = await runLoad(
          gens,
          'baseline',
          n,
          proxyDial(proxies),
          plainMessage,
          proxies.map((p) => p.pid),
        );
        const relayed = await runLoad(
          gens,
          'relay',
          n,
          relayDial(relays),
          relayMessage,
          relays.map((p) => p.pid),
        );
        rounds.push({ direct, baseline, relay: relayed });
        process.stderr.write(
          `N=${n} round ${r + 1}: relay ${fmtRun(relayed)}; baseline ${fmtRun(baseline)}; direct p50 ${direct.p50.toFixed(2)} p99 ${direct.p99.toFixed(2)}\n`,
        );
      }
      results.push({
        n,
        direct: medianOf(rounds.map((x) => x.direct)),
        baseline: medianOf(rounds.map((x) => x.baseline)),
        relay: medianOf(rounds.map((x) => x.relay)),
      });
    }

    const f = (v: number, d = 1) => (Number.isFinite(v) ? v.toFixed(d) : 'n/a');
    const lines: string[] = [];
    const relayCores = new Set(relays.map((_, k) => SERVER_CORES[k % SERVER_CORES.length])).size;
    lines.push(
      `Medians of ${ROUNDS} rounds; ${SECONDS} s measured per run after ${WARMUP_SECONDS} s warm-up` +
        `${PRIME_SECONDS > 0 ? ` (relay and proxy primed ${PRIME_SECONDS} s at N = ${SESSIONS[0]} first)` : ''}; dialect ${DIALECT}; ` +
        `${RELAYS} relay(s) and ${RELAYS} proxy(ies) on core(s) ${SERVER_CORES.join(',')}, simulator and ${WORKERS > 0 ? `${WORKERS} load worker(s)` : 'the load client'} on core ${LOAD_CORE}; ` +
        `Node ${process.version}${NICE ? `; nice ${NICE}` : ''}.`,
    );
    lines.push('');
    lines.push(
      '| N | frames/s relay / baseline | CPU µs per frame relay / baseline (ratio) | p50 direct | p50 added relay / baseline | p99 direct | p99 added relay / baseline | frames lost relay / baseline |',
    );
    lines.push('|---|---|---|---|---|---|---|---|');
    for (const r of results) {
      const cpuR = r.relay.cpuUsPerFrame ?? NaN;
      const cpuB = r.baseline.cpuUsPerFrame ?? NaN;
      const add = (x: LoadResult, k: 'p50' | 'p99') => x[k] - r.direct[k];
      lines.push(
        `| ${r.n} | ${f(r.relay.framesPerSecond, 0)} / ${f(r.baseline.framesPerSecond, 0)} (${f(r.relay.framesPerSecond / r.baseline.framesPerSecond, 2)}) ` +
          `| ${f(cpuR)} / ${f(cpuB)} (${f(cpuR / cpuB, 2)}) ` +
          `| ${f(r.direct.p50, 2)} ms | +${f(add(r.relay, 'p50'), 2)} / +${f(add(r.baseline, 'p50'), 2)} ms (${f(add(r.relay, 'p50') - add(r.baseline, 'p50'), 2)} more) ` +
          `| ${f(r.direct.p99, 2)} ms | +${f(add(r.relay, 'p99'), 2)} / +${f(add(r.baseline, 'p99'), 2)} ms (${f(add(r.relay, 'p99') - add(r.baseline, 'p99'), 2)} more) ` +
          `| ${r.relay.lost} / ${r.baseline.lost} |`,
      );
    }
    // Issue 13 item 4: the largest N whose p99 added stays within 5 ms, per core the relays ran on.
    const within = results.filter((r) => r.relay.p99 - r.direct.p99 <= 5 && r.relay.lost === 0).map((r) => r.n);
    lines.push('');
    lines.push(
      within.length
        ? `Sessions per relay core with p99 added <= 5 ms: ${f(Math.max(...within) / relayCores, 0)} (largest such N ${Math.max(...within)} of ${SESSIONS.join(', ')}, ${relayCores} relay core(s)).`
        : `Sessions per relay core with p99 added <= 5 ms: below ${Math.min(...SESSIONS)} (no N of ${SESSIONS.join(', ')} stayed within 5 ms).`,
    );
    if (mem.length) {
      lines.push('');
      lines.push(
        `Memory per idle attached session (${IDLE} sessions attached to a freshly started relay or proxy, full GC before each reading, median of ${mem.length}):`,
      );
      lines.push('');
      lines.push('| | relay | baseline | ratio |');
      lines.push('|---|---|---|---|');
      for (const [label, k] of [
        ['RSS growth, first attach (cold heap)', 'coldRss'],
        ['RSS growth, attach again (warm heap)', 'warmRss'],
        ['retained JS heap + external', 'retained'],
      ] as const) {
        lines.push(
          `| ${label} | ${f(memOf('relay', k) / 1024)} KiB | ${f(memOf('baseline', k) / 1024)} KiB | ${f(memOf('relay', k) / memOf('baseline', k), 2)} |`,
        );
      }
    }
    process.stdout.write(`${lines.join('\n')}\n`);
  } finally {
    for (const p of procs) p.kill('SIGTERM');
    await sleep(500);
    for (const p of procs) if (p.exitCode === null) p.kill('SIGKILL');
    await bus.jsm.streams.delete(bus.subjects.stream).catch(() => {});
    await bus.close();
    await testDb.drop();
  }
}

if (IS_WORKER) serveAsWorker();
else {
  await main();
  process.exit(0);
}
