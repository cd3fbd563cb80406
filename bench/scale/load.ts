// The scale run's load generator: worker processes (one per load core), each driving its share over IPC.
// - statement: the create statement straight to PostgreSQL from `clients` connections, each sending it again as
//   soon as it answered: creates.ts's statement as the control plane sends it (prepared), the creates' baseline.
// - creates: a closed loop of `concurrency` clients, each sending POST /v1/voice/sessions again as soon as the
//   last one answered, over every control plane and every key, for `warmup` then `seconds`.
// - sessions: voice sessions streaming 20 ms PCM16 frames in real time to the simulator's echo-stream model,
//   through the relay or directly (the baseline); the latency of each frame's echo, measured after `warmup`.
import { execFileSync, fork, type ChildProcess } from 'node:child_process';
import { Agent, request } from 'node:http';
import pg from 'pg';
import WebSocket from 'ws';
import { BYTES_PER_MS, newId } from '@s2s/core';
import { benchStatement } from './creates.js';

const FRAME_MS = 20;

export interface CreatesJob {
  kind: 'creates';
  planes: string[];
  secrets: string[];
  model: string;
  concurrency: number;
  warmup: number;
  seconds: number;
}

/** The create statement itself, straight to PostgreSQL: the baseline of the creates (as pgbench, in Node). */
export interface StatementJob {
  kind: 'statement';
  db: string;
  /** Secret hashes of the keys; each transaction takes a random one. */
  hashes: string[];
  rateId: string;
  /** Connections, each running the statement (prepared) again as soon as it answered. */
  clients: number;
  warmup: number;
  seconds: number;
}

export interface Dial {
  url: string;
  protocols: string[];
  secret: string | null;
  /** The event that says the socket takes audio. */
  ready: string;
}

export interface SessionsJob {
  kind: 'sessions';
  dials: Dial[];
  /** When each dial's first frame goes, within the frame period. */
  offsetsMs: number[];
  /** Adds an event_id to each frame (the relay's protocol; the simulator takes either). */
  eventIds: boolean;
  warmup: number;
  seconds: number;
}

export interface LoadResult {
  ok: number;
  failed: number;
  /** Latencies (ms) of what answered in the measured window. */
  latencies: number[];
  /** Frames sent whose echo never came (sessions). */
  lost: number;
  seconds: number;
}

type Job = CreatesJob | StatementJob | SessionsJob;

const now = () => performance.now();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * `clients` closed loops: each calls `once` again as soon as it settled (true: a success). What settles within the
 * measured window (after `warmup`, for `seconds`) counts, with its latency.
 */
async function closedLoop(clients: number, warmup: number, seconds: number, once: (k: number) => Promise<boolean>): Promise<LoadResult> {
  const result: LoadResult = { ok: 0, failed: 0, latencies: [], lost: 0, seconds };
  let measuring = false;
  let running = true;
  const loop = async (k: number) => {
    while (running) {
      const t0 = now();
      const counted = measuring;
      const ok = await once(k).catch(() => false);
      if (!counted || !measuring) continue;
      if (ok) {
        result.ok++;
        result.latencies.push(now() - t0);
      } else result.failed++;
    }
  };
  const loops = Array.from({ length: clients }, (_, k) => loop(k));
  await sleep(warmup * 1000);
  measuring = true;
  const t0 = now();
  await sleep(seconds * 1000);
  measuring = false;
  result.seconds = (now() - t0) / 1000;
  running = false;
  await Promise.all(loops);
  return result;
}

async function creates(job: CreatesJob): Promise<LoadResult> {
  const agents = job.planes.map(() => new Agent({ keepAlive: true, maxSockets: job.concurrency }));
  const body = JSON.stringify({ model: job.model, mode: 'speech_to_speech' });
  const targets = job.planes.map((p) => new URL('/v1/voice/sessions', p));
  let n = 0;
  const result = await closedLoop(job.concurrency, job.warmup, job.seconds, () => {
    const plane = n++ % targets.length;
    const target = targets[plane]!;
    const secret = job.secrets[Math.floor(Math.random() * job.secrets.length)]!;
    return new Promise<boolean>((resolve) => {
      const req = request(
        {
          agent: agents[plane],
          host: target.hostname,
          port: target.port,
          path: target.pathname,
          method: 'POST',
          headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
        },
        (res) => {
          res.resume();
          res.on('end', () => resolve(res.statusCode === 201));
        },
      );
      req.on('error', () => resolve(false));
      req.end(body);
    });
  });
  for (const a of agents) a.destroy();
  return result;
}

async function statement(job: StatementJob): Promise<LoadResult> {
  const conns = await Promise.all(
    Array.from({ length: job.clients }, async () => {
      const c = new pg.Client({ connectionString: job.db });
      c.on('error', () => {});
      await c.connect();
      return c;
    }),
  );
  const result = await closedLoop(job.clients, job.warmup, job.seconds, async (k) => {
    const hash = job.hashes[Math.floor(Math.random() * job.hashes.length)]!;
    await conns[k]!.query(benchStatement(hash, newId('vs'), job.rateId));
    return true;
  });
  await Promise.all(conns.map((c) => c.end()));
  return result;
}

function frameMessage(eventId: boolean): string {
  const pcm = Buffer.alloc(FRAME_MS * BYTES_PER_MS);
  for (let i = 0; i < pcm.length / 2; i++) pcm.writeInt16LE(Math.round(3000 * Math.sin((2 * Math.PI * 440 * i) / 24000)), i * 2);
  return JSON.stringify({ type: 'input_audio_buffer.append', ...(eventId ? { event_id: 'f' } : {}), audio: pcm.toString('base64') });
}

const DELTA = Buffer.from('"response.output_audio.delta"');

async function sessions(job: SessionsJob): Promise<LoadResult> {
  const message = frameMessage(job.eventIds);
  const result: LoadResult = { ok: 0, failed: 0, latencies: [], lost: 0, seconds: job.seconds };
  let measuring = false;
  const conns = await Promise.all(
    job.dials.map(
      (dial) =>
        new Promise<{ ws: WebSocket; sent: number[]; echoed: number; timer?: NodeJS.Timeout }>((resolve, reject) => {
          const ws = new WebSocket(dial.url, dial.protocols, {
            perMessageDeflate: false,
            headers: dial.secret ? { authorization: `Bearer ${dial.secret}` } : {},
          });
          const conn = { ws, sent: [] as number[], echoed: 0 };
          let ready = false;
          ws.on('message', (data: Buffer) => {
            if (data.subarray(0, 48).includes(DELTA)) {
              const t0 = conn.sent[conn.echoed++];
              if (t0 !== undefined && measuring) {
                result.ok++;
                result.latencies.push(now() - t0);
              }
            } else if (!ready && data.includes(dial.ready)) {
              ready = true;
              resolve(conn);
            }
          });
          ws.on('error', reject);
          ws.on('unexpected-response', (_req, res) => reject(new Error(`${dial.url} refused: ${res.statusCode}`)));
        }),
    ),
  );
  conns.forEach((c, i) => {
    c.timer = setTimeout(() => {
      const send = () => {
        c.sent.push(now());
        c.ws.send(message);
      };
      send();
      c.timer = setInterval(send, FRAME_MS);
    }, job.offsetsMs[i]);
  });
  await sleep(job.warmup * 1000);
  measuring = true;
  const t0 = now();
  await sleep(job.seconds * 1000);
  measuring = false;
  result.seconds = (now() - t0) / 1000;
  for (const c of conns) clearTimeout(c.timer);
  const deadline = now() + 5000;
  while (now() < deadline && conns.some((c) => c.echoed < c.sent.length)) await sleep(20);
  result.lost = conns.reduce((s, c) => s + c.sent.length - c.echoed, 0);
  await Promise.all(
    conns.map(
      (c) =>
        new Promise<void>((resolve) => {
          c.ws.once('close', () => resolve());
          c.ws.close(1000);
          setTimeout(() => {
            c.ws.terminate();
            resolve();
          }, 2000).unref();
        }),
    ),
  );
  return result;
}

/** Serves jobs from the parent over IPC: this is a load worker process. */
export function serveLoadWorker(): void {
  process.on('message', (m: { id: number; job: Job }) => {
    const run = m.job.kind === 'creates' ? creates(m.job) : m.job.kind === 'statement' ? statement(m.job) : sessions(m.job);
    run.then(
      (result) => process.send?.({ id: m.id, result }),
      (err: unknown) => process.send?.({ id: m.id, error: err instanceof Error ? err.message : String(err) }),
    );
  });
}

/** Load worker processes, one per core of `cores` (a taskset list), each pinned to its core. */
export class LoadWorkers {
  private seq = 0;
  private readonly workers: ChildProcess[];
  private readonly waiting = new Map<number, { resolve: (r: LoadResult) => void; reject: (e: Error) => void }>();

  constructor(cores: string, entry: string, args: string[]) {
    this.workers = cores.split(',').map((core) => {
      const child = fork(entry, args, { execArgv: process.execArgv, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
      execFileSync('taskset', ['-a', '-pc', core, String(child.pid)], { stdio: 'ignore' });
      child.on('message', (m: { id: number; result?: LoadResult; error?: string }) => {
        const w = this.waiting.get(m.id);
        this.waiting.delete(m.id);
        if (m.error !== undefined) w?.reject(new Error(m.error));
        else w?.resolve(m.result!);
      });
      return child;
    });
  }

  get size(): number {
    return this.workers.length;
  }

  /** Runs one job per worker (`jobFor(k)`), merged into one result. */
  async run(jobFor: (k: number) => Job): Promise<LoadResult> {
    const results = await Promise.all(
      this.workers.map(
        (w, k) =>
          new Promise<LoadResult>((resolve, reject) => {
            const id = ++this.seq;
            this.waiting.set(id, { resolve, reject });
            w.send({ id, job: jobFor(k) });
          }),
      ),
    );
    return {
      ok: results.reduce((s, r) => s + r.ok, 0),
      failed: results.reduce((s, r) => s + r.failed, 0),
      latencies: results.flatMap((r) => r.latencies),
      lost: results.reduce((s, r) => s + r.lost, 0),
      seconds: Math.max(...results.map((r) => r.seconds)),
    };
  }

  close(): void {
    for (const w of this.workers) w.kill();
  }
}

/** The p-th percentile (0-100) of `xs`. */
export function percentile(xs: number[], p: number): number {
  const s = Float64Array.from(xs).sort();
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? NaN;
}
