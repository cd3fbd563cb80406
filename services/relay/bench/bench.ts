// Relay benchmark (issue 4): N sessions streaming 20 ms frames in real time through the relay to the local
// simulator's `echo-stream` model, against a bare ws pass-through proxy in front of the same simulator and a
// direct connection to it. Relay and proxy run on core 0, the simulator and this load client on core 1.
// Usage: cd services/relay && npm run bench. Knobs: BENCH_SESSIONS=50,100,200 BENCH_SECONDS=10 BENCH_WARMUP=3
// BENCH_ROUNDS=3 BENCH_IDLE=300 BENCH_NICE=-10 (priority on a shared machine); BENCH_RELAY_NODE_ARGS and
// BENCH_PROXY_NODE_ARGS (e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof") and BENCH_DEBUG=1 for investigations.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { connectBus } from '@s2s/bus';
import { REALTIME_PROTOCOL } from '@s2s/contract';
import { BYTES_PER_MS } from '@s2s/core';
import { createSession } from '@s2s/sessions';
import { createTestDatabase, createWalletAndKey } from '@s2s/db/testing';
import WebSocket from 'ws';

const env = process.env;
const SESSIONS = (env.BENCH_SESSIONS ?? '50,100,200').split(',').map(Number);
const SECONDS = Number(env.BENCH_SECONDS ?? 10);
const WARMUP_SECONDS = Number(env.BENCH_WARMUP ?? 3);
const IDLE = Number(env.BENCH_IDLE ?? 300);
// Each N runs ROUNDS times (direct, baseline, relay interleaved); the table gives the median of each figure.
const ROUNDS = Number(env.BENCH_ROUNDS ?? 3);
const FRAME_MS = 20;
const CLK_TCK = Number(execFileSync('getconf', ['CLK_TCK']).toString().trim()) || 100;
const root = fileURLToPath(new URL('../../../', import.meta.url));

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
): Promise<Proc> {
  // BENCH_NICE (e.g. -10) raises the priority of every benchmark process on a machine shared with other work.
  const nice = env.BENCH_NICE ? ['nice', '-n', env.BENCH_NICE] : [];
  const gcHook = ['--expose-gc', '--import', './services/relay/bench/gc-hook.ts'];
  const [cmd, ...args] = [...nice, 'taskset', '-c', String(core), process.execPath, ...nodeArgs, '--import', 'tsx', ...gcHook, script];
  const child = spawn(cmd as string, args, {
    cwd: root,
    env: { ...env, ...vars },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const onLine = new Set<(line: string) => void>();
  return new Promise((resolve, reject) => {
    let buf = '';
    child.stdout!.on('data', (c: Buffer) => {
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
  sent: number;
  received: number;
  /** Send times (ms, hrtime) of frames still awaiting their echo, in order. */
  inflight: number[];
  head: number;
  timer: NodeJS.Timeout | null;
}

const DELTA_PREFIX = Buffer.from('{"type":"response.output_audio.delta"');
const now = () => performance.now();

function frameMessage(mode: Mode): string {
  const pcm = Buffer.alloc(FRAME_MS * BYTES_PER_MS);
  for (let i = 0; i < pcm.length / 2; i++) pcm.writeInt16LE(Math.round(3000 * Math.sin((2 * Math.PI * 440 * i) / 24000)), i * 2);
  // The relay's client protocol and the upstream protocol share this event; event ids differ in kind only.
  return JSON.stringify({
    type: 'input_audio_buffer.append',
    ...(mode === 'relay' ? { event_id: 'f' } : {}),
    audio: pcm.toString('base64'),
  });
}

/** Opens one session's socket and resolves when it is ready for audio. */
function open(url: string, mode: Mode, secret: string | null, latencies: { push(v: number): void; recording: boolean }): Promise<Conn> {
  const ws = new WebSocket(url, mode === 'relay' ? REALTIME_PROTOCOL : [], {
    perMessageDeflate: false,
    headers: secret ? { Authorization: `Bearer ${secret}` } : {},
  });
  const conn: Conn = { ws, sent: 0, received: 0, inflight: [], head: 0, timer: null };
  const readyType = mode === 'relay' ? 'conversation.created' : 'session.created';
  return new Promise((resolve, reject) => {
    let ready = false;
    ws.on('message', (data: Buffer) => {
      if (data.subarray(0, DELTA_PREFIX.length).equals(DELTA_PREFIX)) {
        const t0 = conn.inflight[conn.head++];
        conn.received++;
        if (t0 !== undefined && latencies.recording) latencies.push(now() - t0);
        if (conn.head > 1024) {
          conn.inflight = conn.inflight.slice(conn.head);
          conn.head = 0;
        }
        return;
      }
      if (!ready && data.includes(readyType)) {
        ready = true;
        resolve(conn);
      }
    });
    ws.on('error', reject);
    ws.on('unexpected-response', (_q, res) => reject(new Error(`refused: ${res.statusCode}`)));
  });
}

class Samples {
  private data = new Float64Array(1 << 20);
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
  percentile(p: number): number {
    const sorted = this.data.slice(0, this.n).sort();
    return sorted[Math.min(this.n - 1, Math.floor((p / 100) * this.n))] ?? NaN;
  }
}

interface LoadResult {
  mode: Mode;
  sessions: number;
  framesPerSecond: number;
  cpuUsPerFrame: number | null;
  /** Share of that CPU spent in the kernel. */
  systemShare: number | null;
  p50: number;
  p99: number;
  lost: number;
}

async function runLoad(
  mode: Mode,
  sessions: number,
  urlFor: (i: number) => string,
  secret: string | null,
  pid: number | null,
): Promise<LoadResult> {
  const samples = new Samples();
  const conns = await Promise.all(Array.from({ length: sessions }, (_, i) => open(urlFor(i), mode, secret, samples)));
  const message = frameMessage(mode);
  // Sessions are spread evenly over the 20 ms frame period, as independent clients would be.
  conns.forEach((c, i) => {
    const first = setTimeout(
      () => {
        const send = () => {
          c.inflight.push(now());
          c.sent++;
          c.ws.send(message);
        };
        send();
        c.timer = setInterval(send, FRAME_MS);
      },
      (i * FRAME_MS) / sessions,
    );
    c.timer = first;
  });
  await sleep(WARMUP_SECONDS * 1000);
  const cpu0 = pid ? cpuTimes(pid) : { user: 0, system: 0 };
  const recv0 = conns.reduce((s, c) => s + c.received, 0);
  const t0 = now();
  samples.recording = true;
  await sleep(SECONDS * 1000);
  samples.recording = false;
  const elapsed = (now() - t0) / 1000;
  const cpu1 = pid ? cpuTimes(pid) : { user: 0, system: 0 };
  const cpu = cpu1.user - cpu0.user + (cpu1.system - cpu0.system);
  const frames = conns.reduce((s, c) => s + c.received, 0) - recv0;
  for (const c of conns) if (c.timer) clearInterval(c.timer);
  // Every frame sent must come back.
  const deadline = now() + 5000;
  while (now() < deadline && conns.some((c) => c.received < c.sent)) await sleep(20);
  const lost = conns.reduce((s, c) => s + (c.sent - c.received), 0);
  await Promise.all(conns.map((c) => closeWs(c.ws)));
  return {
    mode,
    sessions,
    framesPerSecond: frames / elapsed,
    cpuUsPerFrame: pid ? (cpu * 1e6) / frames : null,
    systemShare: pid ? (cpu1.system - cpu0.system) / cpu : null,
    p50: samples.percentile(50),
    p99: samples.percentile(99),
    lost,
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
async function idleMemory(
  mode: Mode,
  count: number,
  urlFor: (i: number) => string,
  secret: string | null,
  proc: Proc,
): Promise<IdleMemory> {
  const attachAll = async (): Promise<Conn[]> => {
    const samples = new Samples();
    const conns: Conn[] = [];
    for (let i = 0; i < count; i += 50) {
      conns.push(
        ...(await Promise.all(Array.from({ length: Math.min(50, count - i) }, (_, j) => open(urlFor(i + j), mode, secret, samples)))),
      );
    }
    return conns;
  };
  await sleep(3000);
  const cold0 = await settledMemory(proc);
  const first = await attachAll();
  await sleep(1500);
  const cold1 = await settledMemory(proc);
  await Promise.all(first.map((c) => closeWs(c.ws)));
  // Closed upstream sockets stay referenced by their 2 s close-timeout timers (the adapters').
  await sleep(3000);
  const warm0 = await settledMemory(proc);
  const second = await attachAll();
  await sleep(1500);
  const warm1 = await settledMemory(proc);
  await Promise.all(second.map((c) => closeWs(c.ws)));
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
    p50: median(runs.map((r) => r.p50)),
    p99: median(runs.map((r) => r.p99)),
    lost: runs.reduce((s, r) => s + r.lost, 0),
  };
}

function fmtRun(r: LoadResult): string {
  return `${r.cpuUsPerFrame?.toFixed(1)} us/frame (${((r.systemShare ?? 0) * 100).toFixed(0)}% system), p50 ${r.p50.toFixed(2)} p99 ${r.p99.toFixed(2)} ms, ${r.framesPerSecond.toFixed(0)} frames/s, lost ${r.lost}`;
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

// ---- main ----

async function main(): Promise<void> {
  execFileSync('taskset', ['-pc', '1', String(process.pid)], { stdio: 'ignore' });
  if (env.BENCH_NICE) execFileSync('renice', ['-n', env.BENCH_NICE, '-p', String(process.pid)], { stdio: 'ignore' });
  const prefix = `bench_${randomBytes(3).toString('hex')}`;
  const testDb = await createTestDatabase();
  const procs: ChildProcess[] = [];
  const bus = await connectBus({ url: env.NATS_URL ?? 'nats://127.0.0.1:4222', prefix });
  try {
    const sim = await startPinned(
      1,
      'services/local-provider/src/main.ts',
      { LOCAL_PROVIDER_PORT: '0', LOG_LEVEL: 'info' },
      jsonPort('local provider listening'),
    );
    procs.push(sim.child);
    const simUrl = `ws://127.0.0.1:${sim.port}/v1/realtime`;
    const relay = await startPinned(
      0,
      'services/relay/src/main.ts',
      {
        DATABASE_URL: testDb.url,
        BUS_PREFIX: prefix,
        RELAY_PORT: '0',
        LOCAL_PROVIDER_URL: simUrl,
        LOG_LEVEL: 'info',
        NODE_ENV: 'production',
      },
      jsonPort('relay listening'),
      env.BENCH_RELAY_NODE_ARGS ? env.BENCH_RELAY_NODE_ARGS.split(' ') : [],
    );
    procs.push(relay.child);
    const proxy = await startPinned(
      0,
      'services/relay/bench/passthrough.ts',
      { TARGET_URL: simUrl },
      jsonPort(''),
      env.BENCH_PROXY_NODE_ARGS ? env.BENCH_PROXY_NODE_ARGS.split(' ') : [],
    );
    procs.push(proxy.child);

    // Fixtures: one big wallet, one echo-stream model, enough sessions for the largest run and the idle test.
    const db = testDb.db;
    const key = await createWalletAndKey(db.pool, { balanceCents: 1_000_000_000 });
    const { walletId, keyId } = key;
    await db.pool.query(
      `INSERT INTO catalog_models (id, display_name, owned_by, provider, provider_model, enabled, approved, capabilities, audio, modalities)
       VALUES ('local/echo-stream', 'Echo stream', 'bench', 'local', 'echo-stream', true, true,
               '{"speech_to_speech":true,"server_vad":false,"barge_in":true,"input_transcription":"optional","output_transcription":"optional"}',
               '{"input":{"type":"audio/pcm","encoding":"pcm16le","sample_rate_hz":24000,"channels":1},"output":{"type":"audio/pcm","encoding":"pcm16le","sample_rate_hz":24000,"channels":1}}',
               '{"input":["audio"],"output":["audio"]}')`,
    );
    await db.pool
      .query(`INSERT INTO rate_snapshots (id, model_id, source, per_minute, audio_in_token, audio_out_token, relay_fee_milli_cents)
                         VALUES ('rate_bench', 'local/echo-stream', 'upstream_derived', 1000, 10, 20, 500)`);
    await db.pool.query(`UPDATE catalog_models SET current_rate_id = 'rate_bench' WHERE id = 'local/echo-stream'`);
    const maxN = Math.max(...SESSIONS);
    const sessionIds: string[] = [];
    for (let i = 0; i < Math.max(maxN, IDLE); i++) {
      const { session } = await createSession({
        ctx: { db },
        input: {
          key: { keyId, walletId },
          request: { model: 'local/echo-stream', mode: 'speech_to_speech' },
          traceId: randomBytes(16).toString('hex'),
          settings: { preauthMinutes: 120, idleTimeoutSeconds: 3600, maxSeconds: 7200 },
        },
      });
      sessionIds.push(session.id);
    }

    const relayUrl = (i: number) => `ws://127.0.0.1:${relay.port}/v1/realtime?session_id=${sessionIds[i]}`;
    const proxyUrl = () => `ws://127.0.0.1:${proxy.port}/v1/realtime?model=echo-stream`;
    const directUrl = () => `${simUrl}?model=echo-stream`;

    const results: { n: number; direct: LoadResult; baseline: LoadResult; relay: LoadResult }[] = [];
    for (const n of SESSIONS) {
      const rounds: { direct: LoadResult; baseline: LoadResult; relay: LoadResult }[] = [];
      for (let r = 0; r < ROUNDS; r++) {
        const direct = await runLoad('direct', n, directUrl, null, null);
        const baseline = await runLoad('baseline', n, proxyUrl, null, proxy.pid);
        const relayed = await runLoad('relay', n, relayUrl, key.secret, relay.pid);
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
    const mem: { relay: IdleMemory; baseline: IdleMemory }[] = [];
    for (let r = 0; r < ROUNDS; r++) {
      mem.push({
        baseline: await idleMemory('baseline', IDLE, proxyUrl, null, proxy),
        relay: await idleMemory('relay', IDLE, relayUrl, key.secret, relay),
      });
    }
    const memOf = (who: 'relay' | 'baseline', k: keyof IdleMemory) => median(mem.map((x) => x[who][k]));

    const f = (v: number, d = 1) => (Number.isFinite(v) ? v.toFixed(d) : 'n/a');
    const lines: string[] = [];
    lines.push(
      `Medians of ${ROUNDS} rounds; ${SECONDS} s measured per run after ${WARMUP_SECONDS} s warm-up; relay and baseline on core 0, simulator and load client on core 1; ` +
        `Node ${process.version}${env.BENCH_NICE ? `; nice ${env.BENCH_NICE}` : ''}.`,
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
    lines.push('');
    lines.push(`Memory per idle attached session (${IDLE} sessions attached, full GC before each reading, median of ${ROUNDS}):`);
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

await main();
process.exit(0);
