// Billing benchmark (a script, not a test): prints figures, asserts nothing.
//  (a) usage checkpoints consumed per second by one billing process, from a pre-filled stream;
//  (c) the same for the traffic of 10,000 live sessions checkpointing every 250 ms (40,000/s): every
//      attachment interleaved, so a batch holds few checkpoints of any one attachment;
//  (b) latency from an end request to the settled message at a steady load of live sessions.
// BENCH_PARTS (default "a,c,b") picks parts; BENCH_BASELINE_DIR and BENCH_ROUNDS are described at part (c).
// Each part uses a fresh database and bus prefix. Run: npm run bench -- billing
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { connectBus, pullSource, subscribeMessages, type Bus } from '@s2s/bus';
import { compactRoutes, type UsageCheckpoint, type UsageCheckpointV3 } from '@s2s/contract';
import { usageCheckpointMsgId } from '@s2s/core';
import { requestEnd } from '@s2s/sessions';
import { createTestDatabase, checkLedgerInvariants, type TestDatabase } from '@s2s/db/testing';
import { DURABLE_NAME, ensureBillingConsumer, loadConfig } from '@s2s/billing/bench';
import { serviceDir } from '../services.js';
import { attach, createOwner, createTestSession } from '@s2s/sessions/testing';

const NATS_URL = process.env.NATS_URL ?? 'nats://127.0.0.1:4222';
const serviceRoot = serviceDir('billing');
const arg = (name: string, fallback: number) => Number(process.env[`BENCH_${name}`] ?? fallback);

const THROUGHPUT_ATTACHMENTS = arg('ATTACHMENTS', 2000);
const THROUGHPUT_PER_ATTACHMENT = arg('CHECKPOINTS_PER_ATTACHMENT', 100);
const LIVE_SESSIONS = arg('LIVE_SESSIONS', 200);
const ENDS_PER_SECOND = arg('ENDS_PER_SECOND', 10);
const LATENCY_SECONDS = arg('LATENCY_SECONDS', 30);
// The relay checkpoints every 250 ms while counters change: 4 a second per live streaming session.
const RATE_SESSIONS = arg('RATE_SESSIONS', 10_000);
const RATE_CHECKPOINTS_PER_SECOND = 4;
const RATE_SECONDS = arg('RATE_SECONDS', 5);
const PARTS = (process.env.BENCH_PARTS ?? 'a,c,b').split(',');

interface Env {
  db: TestDatabase;
  bus: Bus;
  prefix: string;
  close(): Promise<void>;
}

async function environment(): Promise<Env> {
  const db = await createTestDatabase();
  const prefix = `bench_${randomBytes(4).toString('hex')}`;
  const bus = await connectBus({ url: NATS_URL, prefix, name: 'billing-bench' });
  return {
    db,
    bus,
    prefix,
    close: async () => {
      await bus.jsm.streams.delete(bus.subjects.stream).catch(() => undefined);
      await bus.close();
      await db.drop();
    },
  };
}

function billingProcess(env: Env, extra: Record<string, string> = {}, cwd = serviceRoot): ChildProcess & { exited: Promise<void> } {
  // BENCH_NODE_ARGS, e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof", profiles the billing process.
  const nodeArgs = (process.env.BENCH_NODE_ARGS ?? '').split(' ').filter(Boolean);
  const child = spawn(process.execPath, [...nodeArgs, '--import', 'tsx', 'src/main.ts'], {
    cwd,
    env: {
      ...process.env,
      NODE_ENV: 'production',
      DATABASE_URL: env.db.url,
      NATS_URL,
      BUS_PREFIX: env.prefix,
      // BENCH_LOG_LEVEL=debug prints each fold (checkpoints, attachments, ms) on stdout.
      LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? 'warn',
      OTEL_SDK_DISABLED: 'true',
      ...extra,
    },
    stdio: ['ignore', process.env.BENCH_LOG_LEVEL ? 'inherit' : 'ignore', 'inherit'],
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return Object.assign(child, { exited });
}

/**
 * The ceiling NATS sets on this machine: the same durable consumer (same config and pull size) acknowledging
 * every message as it arrives, nothing decoded or stored; its own connection, in this process (idle meanwhile).
 */
async function bareConsumer(env: Env, batchSize: number): Promise<{ stop(): Promise<void> }> {
  const bus = await connectBus({ url: NATS_URL, prefix: env.prefix, name: 'bare-consumer' });
  const config = loadConfig({ BATCH_SIZE: String(batchSize) });
  await ensureBillingConsumer(bus, config);
  const source = pullSource(bus, { durable: DURABLE_NAME, batchSize, ackWaitMs: config.ACK_WAIT_MS });
  await source.start((m) => m.ack());
  return {
    stop: async () => {
      await source.stop();
      await bus.close();
    },
  };
}

async function stop(child: ChildProcess & { exited: Promise<void> }) {
  child.kill('SIGTERM');
  await child.exited;
}

/**
 * The checkpoint versions part (c) folds: BENCH_CHECKPOINT_VERSIONS=3,4 runs this build on each, version 3
 * (routes as objects, relays before version 4) and version 4 (a single route without its counters), as
 * separate runs of the same round.
 */
const CHECKPOINT_VERSIONS = (process.env.BENCH_CHECKPOINT_VERSIONS ?? '4').split(',').map(Number) as (3 | 4)[];

function checkpoint(
  sessionId: string,
  attachmentId: string,
  seq: number,
  final = false,
  emittedAt = Date.now(),
  version: 3 | 4 = 4,
): UsageCheckpoint | UsageCheckpointV3 {
  // Each step of a live attachment: 1000 ms in, 800 ms out, 10 / 16 tokens, all served by one route.
  const usage = {
    audio_in_ms: 1000 * seq,
    audio_out_ms: 800 * seq,
    input_audio_tokens: 10 * seq,
    input_text_tokens: 0,
    cached_input_tokens: 0,
    output_audio_tokens: 16 * seq,
    output_text_tokens: 0,
    transcribed_ms: 0,
  };
  const ids = {
    type: 'usage.checkpoint',
    session_id: sessionId,
    attachment_id: attachmentId,
    relay_id: 'bench-relay',
    seq,
    ...usage,
  } as const;
  const route = { provider: 'local', provider_model: 'bench', ...usage };
  return version === 3
    ? { ...ids, version, routes: [route], final, emitted_at: emittedAt }
    : { ...ids, version, routes: compactRoutes([route]), final, emitted_at: emittedAt };
}

/** Published as a relay of that version does: JetStream-acknowledged, Msg-Id deduplicated. */
function publishCheckpoint(bus: Bus, c: UsageCheckpoint | UsageCheckpointV3): Promise<unknown> {
  return bus.js.publish(bus.subjects.usageCheckpoint(c.session_id), JSON.stringify(c), { msgID: usageCheckpointMsgId(c) });
}

async function liveSessions(env: Env, n: number) {
  const owner = await createOwner(env.db.db, 1_000_000_000);
  // Far above what a run creates: the key's live-session and create-rate limits (issue 8) refuse none.
  await env.db.db.pool.query('UPDATE api_keys SET max_live_sessions = $2, max_creates_per_minute = $2 WHERE id = $1', [
    owner.key.keyId,
    2_147_483_647,
  ]);
  const out: { id: string; attachmentId: string }[] = [];
  for (let i = 0; i < n; i += 50) {
    const chunk = Array.from({ length: Math.min(50, n - i) }, async () => {
      const s = await createTestSession(env.db.db, owner);
      return { id: s.id, attachmentId: await attach(env.db.db, s.id, 'bench-relay') };
    });
    out.push(...(await Promise.all(chunk)));
  }
  return { owner, sessions: out };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function throughput(
  attachments: number,
  perAttachment: number,
  service: { cwd?: string; env?: Record<string, string>; intervalMs: number; bare?: boolean; version?: 3 | 4 },
): Promise<{ events: number; seconds: number; perSecond: number; publishPerSecond: number; cpuSeconds: number }> {
  const env = await environment();
  try {
    const { sessions } = await liveSessions(env, attachments);
    const total = attachments * perAttachment;
    const publishStart = performance.now();
    const inFlight = new Set<Promise<unknown>>();
    // Emission times as the relays' clocks would show them (one checkpoint per attachment per interval),
    // not the pace of this pre-publish, which depends on the machine.
    const emittedFrom = Date.now() - perAttachment * service.intervalMs;
    // seq-major order: every attachment's seq 1, then every seq 2, ... as live relays interleave.
    for (let seq = 1; seq <= perAttachment; seq++) {
      for (const s of sessions) {
        const c = checkpoint(s.id, s.attachmentId, seq, false, emittedFrom + seq * service.intervalMs, service.version);
        const p: Promise<unknown> = publishCheckpoint(env.bus, c).finally(() => inFlight.delete(p));
        inFlight.add(p);
        if (inFlight.size >= 2000) await Promise.race(inFlight);
      }
    }
    await Promise.all(inFlight);
    const publishPerSecond = total / ((performance.now() - publishStart) / 1000);

    const bare = service.bare ? await bareConsumer(env, loadConfig(process.env).BATCH_SIZE) : undefined;
    const child = bare ? undefined : billingProcess(env, service.env, service.cwd);
    let started: number | undefined;
    let finished: number | undefined;
    for (;;) {
      const info = await env.bus.jsm.consumers.info(env.bus.subjects.stream, 'billing').catch(() => undefined);
      if (info && started === undefined && info.delivered.stream_seq > 0) started = performance.now();
      if (info && info.num_pending === 0 && info.num_ack_pending === 0 && info.ack_floor.stream_seq >= total) {
        finished = performance.now();
        break;
      }
      await sleep(50);
    }
    const cpuSeconds = processCpuSeconds(child?.pid);
    if (child) await stop(child);
    await bare?.stop();
    const seconds = ((finished ?? 0) - (started ?? 0)) / 1000;
    if (bare) return { events: total, seconds, perSecond: total / seconds, publishPerSecond, cpuSeconds };
    const { rows } = await env.db.db.pool.query<{ n: number }>(
      `SELECT count(*)::float8 AS n FROM session_attachments WHERE seq = $1 AND audio_in_ms = $2`,
      [perAttachment, 1000 * perAttachment],
    );
    if (rows[0]?.n !== attachments) throw new Error(`only ${rows[0]?.n} attachments reached their last checkpoint`);
    return { events: total, seconds, perSecond: total / seconds, publishPerSecond, cpuSeconds };
  } finally {
    await env.close();
  }
}

/** User + system CPU seconds of a process so far (Linux /proc; NaN elsewhere). */
function processCpuSeconds(pid: number | undefined): number {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return NaN;
  }
}

/**
 * CPU seconds so far of the PostgreSQL backends connected to this run's database (billing's pool and the
 * bench's own, which does the same in every build); a backend that closed in between is not counted.
 */
async function databaseCpuSeconds(env: Env): Promise<number> {
  const { rows } = await env.db.db.pool.query<{ pid: number }>(`SELECT pid FROM pg_stat_activity WHERE datname = current_database()`);
  return rows.reduce((sum, r) => sum + (processCpuSeconds(r.pid) || 0), 0);
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? NaN;
}

/** `version`: of the simulated relays' checkpoints (a baseline before version 4 reads version 3 only). */
async function latency(
  cwd?: string,
  version: 3 | 4 = 4,
): Promise<{
  ends: number;
  p50: number;
  p99: number;
  max: number;
  checkpointsPerSecond: number;
  invariants: number;
  billingCpuUs: number;
  databaseCpuUs: number;
}> {
  const env = await environment();
  const child = billingProcess(env, {}, cwd);
  const relays = new Map<string, { attachmentId: string; seq: number; timer?: NodeJS.Timeout }>();
  try {
    const pool = await liveSessions(env, LIVE_SESSIONS + ENDS_PER_SECOND * LATENCY_SECONDS);
    let published = 0;
    // A simulated relay per live session: a checkpoint every 250 ms (the relay's interval), the final one when told to stop.
    const startRelay = (s: { id: string; attachmentId: string }) => {
      const relay: { attachmentId: string; seq: number; timer?: NodeJS.Timeout } = { attachmentId: s.attachmentId, seq: 0 };
      relays.set(s.id, relay);
      const tick = () => {
        relay.seq++;
        published++;
        void publishCheckpoint(env.bus, checkpoint(s.id, s.attachmentId, relay.seq, false, Date.now(), version));
      };
      relay.timer = setTimeout(function again() {
        tick();
        relay.timer = setTimeout(again, 250);
      }, Math.random() * 250);
    };
    const stopSub = subscribeMessages(env.bus.nc, env.bus.subjects.endRequestedAll, (m) => {
      if (m.type !== 'session.end_requested') return;
      const relay = relays.get(m.session_id);
      if (!relay) return;
      clearTimeout(relay.timer);
      relay.seq++;
      published++;
      void publishCheckpoint(env.bus, checkpoint(m.session_id, relay.attachmentId, relay.seq, true, Date.now(), version));
    });
    const waiting = new Map<string, (at: number) => void>();
    const settledSub = subscribeMessages(env.bus.nc, env.bus.subjects.settledAll, (m) => {
      if (m.type === 'session.settled') waiting.get(m.session_id)?.(performance.now());
    });

    const queue = [...pool.sessions];
    const live = queue.splice(0, LIVE_SESSIONS);
    live.forEach(startRelay);
    await sleep(3000); // warm-up: every relay has published, the consumer has caught up

    const latencies: number[] = [];
    const pending: Promise<void>[] = [];
    const checkpointsAtStart = published;
    const billingCpuAtStart = processCpuSeconds(child.pid);
    const databaseCpuAtStart = await databaseCpuSeconds(env);
    const started = performance.now();
    for (let i = 0; i < ENDS_PER_SECOND * LATENCY_SECONDS; i++) {
      await sleep(Math.max(0, started + (i * 1000) / ENDS_PER_SECOND - performance.now()));
      const victim = live.splice(Math.floor(Math.random() * live.length), 1)[0];
      const fresh = queue.shift();
      if (fresh) {
        live.push(fresh);
        startRelay(fresh);
      }
      if (!victim) continue;
      pending.push(
        (async () => {
          const settled = new Promise<number>((resolve) => waiting.set(victim.id, resolve));
          const t0 = performance.now();
          await requestEnd({ ctx: { db: env.db.db, bus: env.bus }, input: { sessionId: victim.id, cause: 'client_closed' } });
          latencies.push((await settled) - t0);
          waiting.delete(victim.id);
        })(),
      );
    }
    await Promise.all(pending);
    const elapsed = (performance.now() - started) / 1000;
    const checkpoints = published - checkpointsAtStart;
    const billingCpuUs = ((processCpuSeconds(child.pid) - billingCpuAtStart) * 1e6) / checkpoints;
    const databaseCpuUs = (((await databaseCpuSeconds(env)) - databaseCpuAtStart) * 1e6) / checkpoints;
    for (const r of relays.values()) clearTimeout(r.timer);
    stopSub.unsubscribe();
    settledSub.unsubscribe();
    await sleep(500);
    const invariants = (await checkLedgerInvariants(env.db.db.pool)).length;
    latencies.sort((a, b) => a - b);
    return {
      ends: latencies.length,
      p50: percentile(latencies, 50),
      p99: percentile(latencies, 99),
      max: latencies[latencies.length - 1] ?? NaN,
      checkpointsPerSecond: checkpoints / elapsed,
      invariants,
      billingCpuUs,
      databaseCpuUs,
    };
  } finally {
    for (const r of relays.values()) clearTimeout(r.timer);
    await stop(child);
    await env.close();
  }
}

const fmt = (n: number, d = 0) => n.toLocaleString('en-US', { maximumFractionDigits: d, minimumFractionDigits: d });

if (PARTS.includes('a')) {
  const a = await throughput(THROUGHPUT_ATTACHMENTS, THROUGHPUT_PER_ATTACHMENT, { intervalMs: 1000 });
  console.log(
    `(a) usage throughput: ${fmt(a.events)} checkpoints over ${fmt(THROUGHPUT_ATTACHMENTS)} attachments folded in ${fmt(a.seconds, 2)} s ` +
      `by one billing process = ${fmt(a.perSecond)} events/s (target >= 20,000), billing CPU ${fmt(a.cpuSeconds, 1)} s; ` +
      `pre-publish ran at ${fmt(a.publishPerSecond)}/s`,
  );
}
// BENCH_BASELINE_DIR: the services/billing directory of another checkout (e.g. before a change), run on the
// same traffic in the same run (parts c and b), so the figures compare as a ratio on this noisy machine.
const baselineDir = process.env.BENCH_BASELINE_DIR;
// BENCH_BASELINE_VERSION: the checkpoint version the baseline folds; 3 (default) for a build before version 4.
const BASELINE_VERSION = arg('BASELINE_VERSION', 3) === 4 ? 4 : 3;
const median = (xs: number[]) => [...xs].sort((x, y) => x - y)[Math.floor((xs.length - 1) / 2)] ?? NaN;
if (PARTS.includes('c')) {
  const need = RATE_SESSIONS * RATE_CHECKPOINTS_PER_SECOND;
  // The baseline folds BENCH_BASELINE_VERSION; this build each version asked for.
  const runs: [string, { cwd?: string; intervalMs: number; bare?: boolean; version?: 3 | 4 }][] = CHECKPOINT_VERSIONS.map((version) => [
    CHECKPOINT_VERSIONS.length > 1 ? `this build, checkpoints v${version}` : 'this build',
    { intervalMs: 250, version },
  ]);
  if (baselineDir) runs.unshift(['baseline', { cwd: baselineDir, intervalMs: 250, version: BASELINE_VERSION }]);
  // BENCH_BARE=0 leaves out the bare consumer (the NATS ceiling of the same run).
  if (process.env.BENCH_BARE !== '0') runs.unshift(['bare consumer (acks only)', { intervalMs: 250, bare: true }]);
  // BENCH_ROUNDS: the runs again, every other round in reverse order (a machine whose load drifts favours
  // neither), with the ratios of each round and their medians.
  const ratios = new Map<string, number[]>();
  for (let round = 1; round <= arg('ROUNDS', 1); round++) {
    const rates = new Map<string, number>();
    for (const [label, service] of round % 2 === 1 ? runs : [...runs].reverse()) {
      const c = await throughput(RATE_SESSIONS, RATE_SECONDS * RATE_CHECKPOINTS_PER_SECOND, service);
      rates.set(label, c.perSecond);
      console.log(
        `(c) round ${round}, ${label}: 250 ms checkpoints of ${fmt(RATE_SESSIONS)} live sessions cost ${fmt(need)} checkpoints/s; ${fmt(c.events)} of them ` +
          `(${RATE_SECONDS} s of that traffic, every attachment interleaved) folded in ${fmt(c.seconds, 2)} s by one billing process = ` +
          `${fmt(c.perSecond)} events/s = ${fmt(c.perSecond / need, 2)} x the live rate, billing CPU ${fmt(c.cpuSeconds, 1)} s ` +
          `(${fmt(c.cpuSeconds / c.seconds, 2)} cores); pre-publish ran at ${fmt(c.publishPerSecond)}/s`,
      );
    }
    const builds = [...rates.keys()].filter((k) => k.startsWith('this build'));
    for (const mine of builds)
      for (const other of ['baseline', 'bare consumer (acks only)', ...builds]) {
        if (!rates.has(other) || other >= mine) continue;
        const ratio = (rates.get(mine) ?? NaN) / (rates.get(other) ?? NaN);
        const pair = `${mine} / ${other}`;
        ratios.set(pair, [...(ratios.get(pair) ?? []), ratio]);
        console.log(`(c) round ${round}, ${pair}: ${fmt(ratio, 2)}`);
      }
  }
  for (const [pair, xs] of ratios) if (xs.length > 1) console.log(`(c) ${pair}, median of ${xs.length} rounds: ${fmt(median(xs), 2)}`);
}
if (PARTS.includes('b')) {
  const builds: [string, string | undefined, 3 | 4][] = baselineDir
    ? [
        [`baseline (checkpoints v${BASELINE_VERSION})`, baselineDir, BASELINE_VERSION],
        ['this build', undefined, 4],
      ]
    : [['this build', undefined, 4]];
  // BENCH_ROUNDS as at part (c): every other round in reverse order (A B B A ...).
  const p99s = new Map<string, number[]>();
  for (let round = 1; round <= arg('ROUNDS', 1); round++) {
    for (const [label, cwd, version] of round % 2 === 1 ? builds : [...builds].reverse()) {
      const b = await latency(cwd, version);
      p99s.set(label, [...(p99s.get(label) ?? []), b.p99]);
      console.log(
        `(b) round ${round}, ${label}, end -> settled: ${b.ends} ends at ${ENDS_PER_SECOND}/s with ${LIVE_SESSIONS} live sessions ` +
          `(${fmt(b.checkpointsPerSecond)} checkpoints/s): p50 ${fmt(b.p50, 1)} ms, p99 ${fmt(b.p99, 1)} ms, max ${fmt(b.max, 1)} ms ` +
          `(target p99 <= 50 ms); ledger invariant violations: ${b.invariants}; CPU per checkpoint: billing ${fmt(b.billingCpuUs, 1)} µs, ` +
          `its database's backends ${fmt(b.databaseCpuUs, 1)} µs`,
      );
    }
  }
  for (const [label, xs] of p99s)
    if (xs.length > 1) console.log(`(b) ${label}: p99 of each round ${xs.map((x) => fmt(x, 1)).join(', ')} ms`);
}
process.exit(0);
