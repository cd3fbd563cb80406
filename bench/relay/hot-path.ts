// The relay's own CPU per relayed frame, in process (issue 13 item 1; git log -p docs/benchmarks.md, 2026-11-27): N real
// attachments (the Relay, its codec, the attachment, the openai adapter behind ProviderBase with continuity, the
// meter, budget, checkpointer on the real bus and the telemetry) on in-memory sockets: the client socket and the
// upstream socket are event emitters, so ws framing, the kernel and the other processes are left out. Each round
// every session sends one 20 ms append and gets its echo delta back (as the simulator's echo-stream model sends
// it); process.cpuUsage() over the measured rounds divided by the frames.
// Usage: node --conditions=@s2s/source --import tsx bench/relay/hot-path.ts [--sessions=100]
//   [--frames=20000 per measured block] [--blocks=5] [--dialect=svc-realtime-v1|openai] [--profile]
// PostgreSQL and NATS (NATS_URL) as for the tests. `--against=<worktree>`: the same in another tree (one with
// this file, e.g. a detached worktree of an older main) in this process, blocks alternated, with the ratio.
import { randomBytes } from 'node:crypto';
import { EventEmitter } from 'node:events';
import { Session } from 'node:inspector/promises';
import { existsSync, writeFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { connectBus } from '@s2s/bus';
import { BYTES_PER_MS, ZERO_USAGE } from '@s2s/core';
import { createTestDatabase, createWalletAndKey } from '@s2s/db/testing';
import { LOCAL_TOKEN_RATIO } from '@s2s/local-provider';
import { createSession } from '@s2s/sessions';
import { createLogger, createMetrics } from '@s2s/telemetry';
import type WebSocket from 'ws';
import { insertEchoStreamModel } from './fixtures.js';
import { continuityOf, loadConfig, OpenAIRealtimeAdapter, ProviderBase, Relay, type UpstreamOpener } from '@s2s/relay/bench';

const { values: opt } = parseArgs({
  strict: false,
  options: {
    sessions: { type: 'string' },
    frames: { type: 'string' },
    blocks: { type: 'string' },
    dialect: { type: 'string' },
    profile: { type: 'boolean' },
    against: { type: 'string' },
  },
});
const N = Number(opt.sessions ?? 100);
const FRAMES = Number(opt.frames ?? 20_000);
const BLOCKS = Number(opt.blocks ?? 5);
const DIALECT = opt.dialect === 'openai' ? 'openai' : 'svc-realtime-v1';

/** The part of ws.WebSocket the relay uses, in memory: `send` hands the frame to `onSend`. */
class MemorySocket extends EventEmitter {
  readonly CONNECTING = 0;
  readonly OPEN = 1;
  readyState = 1;
  bytesSent = 0;
  constructor(private readonly onSend: (data: string | Buffer) => void = () => {}) {
    super();
  }
  send(data: string | Buffer, _opts?: unknown, cb?: (err?: Error) => void): void {
    this.bytesSent += data.length;
    this.onSend(data);
    cb?.();
  }
  close(): void {
    if (this.readyState === 3) return;
    this.readyState = 3;
    queueMicrotask(() => this.emit('close', 1000, Buffer.alloc(0)));
  }
  terminate(): void {
    this.close();
  }
}

const pcm = Buffer.alloc(20 * BYTES_PER_MS);
for (let i = 0; i < pcm.length / 2; i++) pcm.writeInt16LE(Math.round(3000 * Math.sin((2 * Math.PI * 440 * i) / 24000)), i * 2);
const b64 = pcm.toString('base64');
// What the bench's load client sends (bench.ts frameMessage(true)).
const APPEND = Buffer.from(JSON.stringify({ type: 'input_audio_buffer.append', event_id: 'f', audio: b64 }));

/** Upstream frames waiting to be delivered (the simulator answers after the relay's turn). */
const upstreamQueue: { ws: MemorySocket; data: Buffer }[] = [];

/**
 * The simulator's echo-stream model as far as the relay's hot path sees it: each append is answered with one
 * output delta of the same audio, a frame made once per session (ws hands the relay slices of what it read,
 * so no copy per frame here either); anything else is parsed and session.update acknowledged.
 */
function fakeUpstream(): MemorySocket {
  let seq = 0;
  const respId = `resp_${randomBytes(4).toString('hex')}`;
  const itemId = `item_${randomBytes(4).toString('hex')}`;
  const frame = (body: Record<string, unknown>) => Buffer.from(JSON.stringify({ ...body, event_id: `event_${++seq}` }));
  const delta = frame({
    type: 'response.output_audio.delta',
    response_id: respId,
    item_id: itemId,
    output_index: 0,
    content_index: 0,
    delta: b64,
  });
  let responding = false;
  const ws: MemorySocket = new MemorySocket((data) => {
    if (data.length > 1000) {
      if (!responding) {
        responding = true;
        upstreamQueue.push({ ws, data: frame({ type: 'response.created', response: { id: respId, status: 'in_progress' } }) });
      }
      upstreamQueue.push({ ws, data: delta });
      return;
    }
    const msg = JSON.parse(data.toString()) as { type: string };
    if (msg.type === 'session.update') upstreamQueue.push({ ws, data: frame({ type: 'session.updated', session: {} }) });
  });
  return ws;
}

export interface HotPath {
  /** Relays `frames` frames (rounds of one per session); the CPU µs per frame it took. */
  block(frames: number): Promise<number>;
  close(): Promise<void>;
}

export async function hotPath(opts: { sessions: number; dialect: 'svc-realtime-v1' | 'openai' }): Promise<HotPath> {
  const N = opts.sessions;
  const prefix = `hot_${randomBytes(3).toString('hex')}`;
  const testDb = await createTestDatabase();
  const bus = await connectBus({ url: process.env.NATS_URL ?? 'nats://127.0.0.1:4222', prefix });
  const db = testDb.db;
  const key = await createWalletAndKey(db.pool, { balanceCents: 1_000_000_000 });
  await insertEchoStreamModel(db);

  const config = loadConfig({
    NODE_ENV: 'production',
    DATABASE_URL: testDb.url,
    BUS_PREFIX: prefix,
    RELAY_PORT: '0',
    LOCAL_PROVIDER_URL: 'ws://127.0.0.1:9/v1/realtime',
    LOG_LEVEL: 'warn',
  });
  const logger = createLogger({ service: 'relay-hot-path', level: 'warn' });
  const metrics = createMetrics({ serviceName: 'relay' });
  const base = new ProviderBase(
    new OpenAIRealtimeAdapter({
      name: 'local',
      url: config.LOCAL_PROVIDER_URL,
      tokenRatio: { ...LOCAL_TOKEN_RATIO },
      openSocket: async () => fakeUpstream() as unknown as WebSocket,
    }),
    { logger, continuity: continuityOf(config) },
  );
  const providers: UpstreamOpener = {
    open: (_provider, sessionConfig, onEvent, signal, hooks) =>
      base.open(sessionConfig, onEvent, signal, hooks?.context ? { context: hooks.context } : {}),
    capabilities: () => base.adapter.supports,
  };
  const relay = new Relay({ config, db, bus, logger, providers, metrics });
  relay.start();

  const clients: MemorySocket[] = [];
  for (let i = 0; i < N; i++) {
    const { session } = await createSession({
      ctx: { db },
      input: {
        key: { keyId: key.keyId, walletId: key.walletId },
        request: { model: 'local/echo-stream', mode: 'speech_to_speech' },
        traceId: randomBytes(16).toString('hex'),
        policy: { preauthMinutes: 600, idleTimeoutSeconds: 3600, maxSeconds: 36000 },
      },
    });
    const ws = new MemorySocket();
    relay.attach({
      ws: ws as unknown as WebSocket,
      session,
      attachmentId: `att_${randomBytes(8).toString('hex')}`,
      startedAt: new Date(),
      prior: { ...ZERO_USAGE },
      legacy: false,
      dialect: opts.dialect,
      requestId: `req_${i}`,
    });
    clients.push(ws);
  }

  /** One frame per session: the appends, then the upstream's answers; every 4 rounds a turn of the event loop. */
  let delivered = 0;
  const round = (): void => {
    for (const ws of clients) ws.emit('message', APPEND, false);
    for (let i = 0; i < upstreamQueue.length; i++) {
      const { ws, data } = upstreamQueue[i]!;
      ws.emit('message', data, false);
    }
    delivered += upstreamQueue.length;
    upstreamQueue.length = 0;
  };
  const yieldLoop = () => new Promise<void>((r) => setImmediate(r));
  const run = async (frames: number): Promise<void> => {
    for (let r = 0; r < frames / N; r++) {
      round();
      if ((r & 3) === 3) await yieldLoop();
    }
    await yieldLoop();
  };

  // Opening: the first append of each session opens its upstream.
  await run(N * 4);
  await new Promise((r) => setTimeout(r, 200));
  await run(N * 4);
  if (clients.reduce((s, c) => s + c.bytesSent, 0) === 0) throw new Error('no frame reached a client: the harness is broken');
  return {
    async block(frames) {
      const d0 = delivered;
      const c0 = process.cpuUsage();
      await run(frames);
      const c = process.cpuUsage(c0);
      return (c.user + c.system) / (delivered - d0);
    },
    async close() {
      await Promise.race([relay.drain(), new Promise((r) => setTimeout(r, 5000))]);
      await bus.close();
      await testDb.drop();
    },
  };
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

async function main(): Promise<void> {
  const h = await hotPath({ sessions: N, dialect: DIALECT });
  if (typeof opt.against === 'string') return compare(h, opt.against);
  await h.block(FRAMES); // warm-up
  let profiler: Session | null = null;
  if (opt.profile) {
    profiler = new Session();
    profiler.connect();
    await profiler.post('Profiler.enable');
    await profiler.post('Profiler.setSamplingInterval', { interval: 100 });
    await profiler.post('Profiler.start');
  }
  const perFrame: number[] = [];
  for (let b = 0; b < BLOCKS; b++) perFrame.push(await h.block(FRAMES));
  if (profiler) {
    const { profile } = await profiler.post('Profiler.stop');
    const file = `/tmp/hot-path-${process.pid}.cpuprofile`;
    writeFileSync(file, JSON.stringify(profile));
    process.stderr.write(`profile: ${file}\n`);
  }
  process.stdout.write(
    `hot-path ${DIALECT} N=${N}: CPU µs per relayed frame (append in + delta out), blocks of ${FRAMES}: ` +
      `${perFrame.map((v) => v.toFixed(2)).join(' ')}; median ${median(perFrame).toFixed(2)}\n`,
  );
  await h.close();
  process.exit(0);
}

/** This tree against another one's copy of this file, in one process: `BLOCKS` blocks each, alternated. */
async function compare(mine: HotPath, tree: string): Promise<void> {
  // A tree from before the benchmarks left services/relay keeps its copy there.
  const copy = [`${tree}/bench/relay/hot-path.ts`, `${tree}/services/relay/bench/hot-path.ts`].find((f) => existsSync(f));
  if (!copy) throw new Error(`${tree} has no hot-path.ts`);
  const other = (await import(copy)) as { hotPath: typeof hotPath };
  const theirs = await other.hotPath({ sessions: N, dialect: DIALECT });
  for (const h of [theirs, mine, theirs, mine]) await h.block(FRAMES); // warm-up
  const a: number[] = [];
  const b: number[] = [];
  for (let r = 0; r < BLOCKS; r++) {
    // Alternate which goes first, so neither always follows the other's garbage.
    if (r & 1) b.push(await mine.block(FRAMES));
    a.push(await theirs.block(FRAMES));
    if (!(r & 1)) b.push(await mine.block(FRAMES));
  }
  const paired = a.map((x, i) => b[i]! / x);
  process.stdout.write(
    `hot-path ${DIALECT} N=${N}, ${BLOCKS} alternated blocks of ${FRAMES} frames: CPU µs per relayed frame, ` +
      `median ${median(a).toFixed(2)} (${tree}) against ${median(b).toFixed(2)} (this tree): ` +
      `${(median(b) / median(a)).toFixed(3)}; median of the paired ratios ${median(paired).toFixed(3)}\n`,
  );
  await theirs.close();
  await mine.close();
  process.exit(0);
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  main().catch((err: unknown) => {
    process.stderr.write(`${String((err as Error)?.stack ?? err)}\n`);
    process.exit(1);
  });
}
