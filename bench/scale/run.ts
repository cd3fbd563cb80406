// `bench/scale run` (issue 28, item 6): the gateway's two scale figures on one machine's cores or on several
// machines, each role where it is told to be.
// 1. Creates per second: a closed loop of clients over every control plane, against the same create statement
//    alone on the same database (bench/scale/creates.ts builds it from @s2s/sessions' createStatement): pgbench
//    from this repository, a Node runner of the statement (load.ts) in a pack.
// 2. Sessions per relay core at p99 added <= 5 ms: N sessions stream 20 ms frames through one relay to the
//    simulator's echo-stream model, and directly to the simulator; N doubles until the relay's p99 echo latency
//    exceeds the direct one's by more than 5 ms (or a frame is lost).
// Roles not given an address are started here, each pinned to its cores (cluster.ts, planCores).
import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { availableParallelism, cpus, totalmem } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { setPortRange, TempDir } from '@s2s/chaos';
import { REALTIME_PROTOCOL } from '@s2s/contract';
import { createDb } from '@s2s/db';
import { insertEchoStreamModel } from '../relay/fixtures.js';
import { planCores, startNats, startPostgres, startService, stopAll, type Kit } from './cluster.js';
import { MODEL, pgbenchScript, seed } from './creates.js';
import { LoadWorkers, percentile, type Dial } from './load.js';

export const RUN_OPTIONS = {
  duration: { type: 'string', default: '20' },
  warmup: { type: 'string', default: '5' },
  wallets: { type: 'string', default: '64' },
  clients: { type: 'string', default: '256' },
  'statement-clients': { type: 'string', default: '32' },
  planes: { type: 'string' },
  sessions: { type: 'string', default: '100,200,400,800,1600,3200' },
  'session-seconds': { type: 'string', default: '10' },
  cores: { type: 'string' },
  ports: { type: 'string', default: '17000-17999' },
  db: { type: 'string' },
  nats: { type: 'string' },
  'control-plane': { type: 'string' },
  relay: { type: 'string' },
  provider: { type: 'string' },
  'admin-token': { type: 'string', default: 'scale-admin-token' },
  'setup-only': { type: 'boolean' },
} as const;

export const RUN_USAGE = `run [options]: prints creates/s against the same statement alone, and sessions per relay core
  --duration=20 --warmup=5         seconds per measured window, and of warm-up before it
  --wallets=64 --clients=256       keys (one wallet each) and closed-loop clients of the creates
  --statement-clients=32           connections running the create statement alone (pgbench's -c)
  --planes=N                       control planes started (default: a quarter of the cores)
  --sessions=100,200,...           sessions per relay, doubled until p99 added > 5 ms
  --session-seconds=10             seconds per sessions window
  --cores=N                        cores to plan over (default: all); --ports=17000-17999 for what it starts
  Addresses of roles running elsewhere (each started here, pinned, when not given):
  --db=postgres://...              the database (with --control-plane: the one those planes use)
  --setup-only                     with --db: apply the schema and seed it, then stop (before starting services on it)
  --nats=nats://...  --control-plane=http://h:p[,http://h:p...]  --relay=ws://h:p  --provider=ws://h:p/v1/realtime`;

const FRAME_MS = 20;
const ADDED_P99_MS = 5;

type RunArgs = ReturnType<typeof parseArgs<{ options: typeof RUN_OPTIONS }>>['values'];

function say(msg: string): void {
  process.stderr.write(`[scale] ${msg}\n`);
}

/** `load` is the entry of load workers (`<entry> load-worker`). */
export async function runScale(kit: Kit, opts: RunArgs, workerEntry: string, dir: TempDir): Promise<void> {
  const [minPort, maxPort] = opts.ports.split('-').map(Number);
  setPortRange(minPort!, maxPort!);
  const cores = Number(opts.cores ?? availableParallelism());
  const plan = planCores(cores, opts.planes ? Number(opts.planes) : undefined);
  const duration = Number(opts.duration);
  const warmup = Number(opts.warmup);
  say(
    `${cores} cores: PostgreSQL ${plan.postgres}, NATS ${plan.nats}, control planes ${plan.planes.join(' ')}, relay ${plan.relay}, ` +
      `load ${plan.load}${plan.shared ? ' (too few cores: roles share cores, the figures are only a smoke test)' : ''}`,
  );

  // ---- the roles ----
  const external = opts['control-plane'] !== undefined;
  if (external && !opts.db) throw new Error('--control-plane needs --db, the database those control planes use');
  let server = opts.db;
  if (!server) {
    const sharedBuffers = Math.max(128, Math.min(2048, Math.floor(totalmem() / 2 ** 20 / 16)));
    server = await startPostgres(kit, dir.path, plan.postgres, ['max_connections=500', `shared_buffers=${sharedBuffers}MB`]);
    say(`PostgreSQL on cores ${plan.postgres}: ${server}`);
  }
  const dbUrl = external || opts['setup-only'] ? server : onDatabase(server, `s2s_scale_${Date.now()}`);
  const keys = await seed(dbUrl, Number(opts.wallets), { migrate: kit.migrate });
  const db = createDb(dbUrl, { max: 2 });
  try {
    const { rowCount } = await db.pool.query(`SELECT 1 FROM catalog_models WHERE id = 'local/echo-stream'`);
    if (!rowCount) await insertEchoStreamModel(db);
    // Every key may hold every session the run opens and create as fast as it can: limits are not measured here.
    await db.pool.query('UPDATE api_keys SET max_live_sessions = 2147483647, max_creates_per_minute = 2147483647');
  } finally {
    await db.close();
  }
  if (opts['setup-only']) {
    say(`${dbUrl.replace(/\/\/[^@]*@/, '//')}: schema applied, model and keys seeded; start the services on it, then run again`);
    return;
  }
  const natsUrl = opts.nats ?? (await startNats(kit, dir.path, plan.nats));
  const prefix = `scale_${Date.now()}`;
  const common = { DATABASE_URL: dbUrl, NATS_URL: natsUrl, BUS_PREFIX: prefix, NODE_ENV: 'production', LOG_LEVEL: 'info' };
  const providerUrl =
    opts.provider ??
    `ws://127.0.0.1:${await startService(kit, 'local-provider', plan.load, { LOCAL_PROVIDER_PORT: '0', LOG_LEVEL: 'info' })}/v1/realtime`;
  const planes = external
    ? opts['control-plane']!.split(',')
    : await Promise.all(
        plan.planes.map(
          async (c) =>
            `http://127.0.0.1:${await startService(kit, 'control-plane', c, { ...common, HTTP_PORT: '0', ADMIN_TOKEN: opts['admin-token'] })}`,
        ),
      );
  const relay =
    opts.relay ??
    `ws://127.0.0.1:${await startService(kit, 'relay', plan.relay, { ...common, RELAY_PORT: '0', LOCAL_PROVIDER_URL: providerUrl })}`;
  say(`control planes ${planes.join(' ')}; relay ${relay}; simulator ${providerUrl}; NATS ${natsUrl}`);
  const workers = new LoadWorkers(plan.load, workerEntry, ['load-worker']);
  try {
    // ---- 1. creates: the statement alone (pgbench, or the Node runner in a pack), then the control planes ----
    const statementClients = Number(opts['statement-clients']);
    const hashes = keys.map((k) => k.hash);
    const alone = kit.pgbench
      ? { by: 'pgbench', ...(await pgbenchCreates(kit.pgbench, dbUrl, hashes, statementClients, plan.load, warmup, duration, dir)) }
      : { by: 'the Node runner', ...(await nodeRunnerCreates(workers, dbUrl, hashes, statementClients, warmup, duration)) };
    say(`${alone.by}: ${alone.tps.toFixed(0)} creates/s at ${statementClients} clients`);
    await vacuumWallets(dbUrl);
    const clients = Number(opts.clients);
    const made = await workers.run((k) => ({
      kind: 'creates',
      planes,
      secrets: keys.map((x) => x.secret),
      model: MODEL,
      concurrency: Math.floor(clients / workers.size) + (k < clients % workers.size ? 1 : 0),
      warmup,
      seconds: duration,
    }));
    const perSecond = made.ok / made.seconds;

    // ---- 2. sessions per relay core ----
    const steps: { n: number; direct: number; relay: number; lost: number }[] = [];
    for (const n of opts.sessions.split(',').map(Number)) {
      const ids = await createSessions(
        planes[0]!,
        keys.map((k) => k.secret),
        n,
      );
      const seconds = Number(opts['session-seconds']);
      const spread = (dials: Dial[], eventIds: boolean) => (k: number) => {
        const mine = dials.map((d, i) => ({ d, i })).filter(({ i }) => i % workers.size === k);
        return {
          kind: 'sessions' as const,
          dials: mine.map(({ d }) => d),
          offsetsMs: mine.map(({ i }) => (i * FRAME_MS) / n),
          eventIds,
          warmup: 3,
          seconds,
        };
      };
      const directDials = ids.map(() => ({
        url: `${providerUrl}?model=echo-stream`,
        protocols: [],
        secret: null,
        ready: 'session.created',
      }));
      const relayDials = ids.map(({ id, secret }) => ({
        url: `${relay}/v1/realtime?session_id=${id}`,
        protocols: [REALTIME_PROTOCOL],
        secret,
        ready: 'conversation.created',
      }));
      const direct = await workers.run(spread(directDials, false));
      const relayed = await workers.run(spread(relayDials, true));
      const step = {
        n,
        direct: percentile(direct.latencies, 99),
        relay: percentile(relayed.latencies, 99),
        lost: relayed.lost + direct.lost,
      };
      steps.push(step);
      say(`${n} sessions: p99 direct ${step.direct.toFixed(2)} ms, through the relay ${step.relay.toFixed(2)} ms, lost ${step.lost}`);
      if (!(step.relay - step.direct <= ADDED_P99_MS) || step.lost > 0) break;
    }
    const within = steps.filter((s) => s.relay - s.direct <= ADDED_P99_MS && s.lost === 0).map((s) => s.n);

    // ---- the figures ----
    const f = (v: number, d = 0) => (Number.isFinite(v) ? v.toFixed(d) : 'n/a');
    const lines = [
      '',
      `scale run: ${new Date().toISOString()}, ${cores} x ${cpus()[0]?.model ?? 'cpu'}, node ${process.version}; ${duration} s windows after ${warmup} s warm-up`,
      `roles: PostgreSQL ${opts.db ? opts.db.replace(/\/\/[^@]*@/, '//') : `cores ${plan.postgres}`}, NATS ${opts.nats ?? `core ${plan.nats}`}, ` +
        `${planes.length} control plane(s) ${external ? planes.join(' ') : `on cores ${plan.planes.join(' ')}`}, relay ${opts.relay ?? `core ${plan.relay}`}, ` +
        `load ${workers.size} worker(s) on cores ${plan.load}${plan.shared ? ' (roles share cores: a smoke test, not a figure)' : ''}`,
      '',
      '| creates | per second | p50 ms | p99 ms | failed |',
      '|---|---:|---:|---:|---:|',
      `| control planes x ${planes.length}, ${clients} closed-loop clients over ${keys.length} keys | ${f(perSecond)} | ${f(percentile(made.latencies, 50), 1)} | ${f(percentile(made.latencies, 99), 1)} | ${made.failed} |`,
      `| ${alone.by}, the same create statement (prepared), ${statementClients} clients | ${f(alone.tps)} | ${f(alone.p50, 1)} | ${f(alone.p99, 1)} | ${alone.failed} |`,
      '',
      `creates per second: ${f(perSecond)} = ${f(perSecond / alone.tps, 2)} x ${alone.by} of the same statement (${f(alone.tps)} tps)`,
      '',
      '| sessions on the relay | p99 direct ms | p99 through the relay ms | p99 added ms | frames lost |',
      '|---:|---:|---:|---:|---:|',
      ...steps.map((s) => `| ${s.n} | ${f(s.direct, 2)} | ${f(s.relay, 2)} | ${f(s.relay - s.direct, 2)} | ${s.lost} |`),
      '',
      within.length
        ? `sessions per relay core at p99 added <= ${ADDED_P99_MS} ms: ${Math.max(...within)}`
        : `sessions per relay core at p99 added <= ${ADDED_P99_MS} ms: below ${steps[0]?.n ?? 'n/a'} (the first step already exceeded it)`,
    ];
    process.stdout.write(`${lines.join('\n')}\n`);
  } finally {
    workers.close();
    await stopAll();
  }
}

function onDatabase(serverUrl: string, database: string): string {
  const u = new URL(serverUrl);
  u.pathname = `/${database}`;
  return u.toString();
}

/** Every create updates a wallet row; vacuum between phases as autovacuum would, so dead rows do not pile up. */
async function vacuumWallets(url: string): Promise<void> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    await c.query('VACUUM ANALYZE wallets');
  } finally {
    await c.end();
  }
}

interface StatementRate {
  tps: number;
  p50: number;
  p99: number;
  failed: number;
}

/** pgbench on creates.ts's script of the create statement, its client pinned to the load cores (from this repository). */
async function pgbenchCreates(
  pgbench: string,
  url: string,
  hashes: string[],
  clients: number,
  cores: string,
  warmup: number,
  seconds: number,
  dir: TempDir,
): Promise<StatementRate> {
  const { script, defines } = pgbenchScript(hashes);
  const file = join(dir.path, 'create.sql');
  writeFileSync(file, script);
  const threads = Math.max(1, Math.min(clients, cores.split(',').length));
  const run = async (duration: number) => {
    await vacuumWallets(url);
    const args = ['-c', cores, pgbench, '-n', '-M', 'prepared', '-c', String(clients), '-j', String(threads), '-T', String(duration)];
    const { stdout } = await promisify(execFile)('taskset', [...args, ...defines, '-f', file, url], { maxBuffer: 16 * 1024 * 1024 });
    const tps = Number(/tps = ([\d.]+)/.exec(stdout)?.[1]);
    if (!Number.isFinite(tps)) throw new Error(`pgbench printed no tps:\n${stdout}`);
    const failed = Number(/number of failed transactions: (\d+)/.exec(stdout)?.[1] ?? 0);
    return { tps, p50: NaN, p99: NaN, failed };
  };
  if (warmup > 0) await run(warmup);
  return run(seconds);
}

/**
 * The same statement from the load workers (load.ts, StatementJob), as the control plane sends it: prepared, a
 * random key's hash, a fresh session id, the model's current rate. The pack's baseline: pgbench and the libraries
 * it needs are over the pack's size budget.
 */
async function nodeRunnerCreates(
  workers: LoadWorkers,
  url: string,
  hashes: string[],
  clients: number,
  warmup: number,
  seconds: number,
): Promise<StatementRate> {
  await vacuumWallets(url);
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  const { rows } = await c.query<{ rate: string }>('SELECT current_rate_id AS rate FROM catalog_models WHERE id = $1', [MODEL]);
  await c.end();
  const r = await workers.run((k) => ({
    kind: 'statement',
    db: url,
    hashes,
    rateId: rows[0]!.rate,
    clients: Math.floor(clients / workers.size) + (k < clients % workers.size ? 1 : 0),
    warmup,
    seconds,
  }));
  return { tps: r.ok / r.seconds, p50: percentile(r.latencies, 50), p99: percentile(r.latencies, 99), failed: r.failed };
}

/** `n` sessions of the echo-stream model, created through the API (keys dealt round-robin). */
async function createSessions(plane: string, secrets: string[], n: number): Promise<{ id: string; secret: string }[]> {
  const out: { id: string; secret: string }[] = [];
  for (let i = 0; i < n; i += 32) {
    const batch = Array.from({ length: Math.min(32, n - i) }, async (_, j) => {
      const secret = secrets[(i + j) % secrets.length]!;
      const res = await fetch(`${plane}/v1/voice/sessions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'local/echo-stream', mode: 'speech_to_speech' }),
      });
      const body = (await res.json()) as { id?: string };
      if (res.status !== 201 || !body.id) throw new Error(`create answered ${res.status}: ${JSON.stringify(body)}`);
      return { id: body.id, secret };
    });
    out.push(...(await Promise.all(batch)));
  }
  return out;
}
