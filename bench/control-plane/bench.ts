// `npm run bench -- control-plane`: creates/s and models/s of the control plane against a fresh real database, with a bare
// express handler as the baseline, each server in its own process so the load generator has its own loop.
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import autocannon, { type Result } from 'autocannon';
import { connectBus } from '@s2s/bus';
import { busSubjects } from '@s2s/contract';
import { hashApiKey, sessionPolicyOf } from '@s2s/core';
import { createTestDatabase } from '@s2s/db/testing';
import { createStatement } from '@s2s/sessions';
import { loadConfig } from '@s2s/control-plane/bench';
import { baselineServer, constantRate, mintBenchKey, startServer, stop, type Started } from './harness.js';

const flag = (name: string) => process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
// --quick: the continuous check (`npm run bench -- --quick`): 3 s phases after 1 s warm-ups.
const QUICK = process.argv.includes('--quick');
const DURATION_S = Number(flag('duration') ?? (QUICK ? 3 : 10));
const WARMUP_S = QUICK ? 1 : 2;
// ...and at least this many requests: a fresh control plane's CPU per create falls by half over its first ~3,000
// creates as V8 optimizes the path (git log -p docs/benchmarks.md, 2026-11-27 perf profile), so a time-only warm-up measured
// part-cold code whenever the machine was slow. Same requests, connections and keep-alive as the measured run.
const WARMUP_REQUESTS = Number(flag('warmup-requests') ?? 5000);
const CONNECTIONS = Number(flag('connections') ?? 32);
const POOL = flag('pool');
// Open-loop rate: by default 0.7 x what PostgreSQL itself did with the create statement in this run.
const RATE_FLAG = flag('rate');
const LOG_LEVEL = flag('log-level') ?? 'info';
// As shipped, telemetry is on (spans made, exported only when an OTLP endpoint is set); --no-telemetry measures without.
const TELEMETRY = !process.argv.includes('--no-telemetry');
// BENCH_CP_NODE_ARGS, e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof", profiles the control plane.
const CP_NODE_ARGS = (process.env.BENCH_CP_NODE_ARGS ?? '').split(' ').filter(Boolean);
const PGBENCH = process.env.PGBENCH ?? 'pgbench';

async function run(name: string, opts: Parameters<typeof autocannon>[0]): Promise<Result> {
  // warm-up: JIT, pool connections, prepared statements
  const warm = await autocannon({ ...opts, duration: WARMUP_S });
  const more = WARMUP_REQUESTS - warm['2xx'] - warm.non2xx;
  if (more > 0) await autocannon({ ...opts, amount: more });
  const result = await autocannon({ ...opts, duration: DURATION_S });
  if (result.errors || result.non2xx || result.timeouts) {
    console.error(`${name}: ${result.errors} errors, ${result.timeouts} timeouts, ${result.non2xx} non-2xx answers`);
  }
  return result;
}

interface PgbenchResult {
  tps: number;
  latencyMs: number;
  clients: number;
}

/**
 * PostgreSQL's own rate for the create: the very statement and parameters `createSession` sends (a prepared
 * statement, a fresh session id each time), run by pgbench with as many clients as the control plane has
 * pool connections, so the database sees the same concurrency; only the HTTP and Node layers are missing.
 */
async function pgbenchCreates(dbUrl: string, secret: string, clients: number, seconds: number): Promise<PgbenchResult> {
  const { rows } = await testDb.db.pool.query<{ rate_snapshot_id: string; preauthorized_cents: number }>(
    `SELECT rate_snapshot_id, preauthorized_cents::float8 AS preauthorized_cents FROM voice_sessions ORDER BY created_at DESC LIMIT 1`,
  );
  const made = rows[0];
  if (!made) throw new Error('pgbench: no session was created through the API first');
  const config = loadConfig({ DATABASE_URL: dbUrl });
  const marker = 'vs_pgbench_marker';
  const statement = createStatement(
    {
      key: { secretHash: hashApiKey(secret) },
      request: { model: 'local/echo-1', mode: 'speech_to_speech' },
      traceId: '0'.repeat(32),
      policy: sessionPolicyOf(config),
    },
    marker,
    { rateId: made.rate_snapshot_id, preauthCents: made.preauthorized_cents },
    null,
  );
  const defines: string[] = [];
  const sql = statement.text.replace(/\$(\d+)\b/g, (_m, n: string) => {
    const value = statement.values[Number(n) - 1];
    if (value === null) return 'NULL';
    if (value === marker) return ':sid';
    defines.push('-D', `p${n}=${String(value)}`);
    return `:p${n}`;
  });
  const dir = mkdtempSync(join(tmpdir(), 'cp-pgbench-'));
  const script = join(dir, 'create.sql');
  // A random numeric id per transaction: collisions among ~10^5 draws from 10^15 are negligible.
  writeFileSync(script, `\\set sid random(1, 999999999999999)\n${sql.trim()};\n`);
  const run = async (duration: number) => {
    const args = ['-n', '-M', 'prepared', '-c', String(clients), '-j', String(Math.min(clients, 2)), '-T', String(duration)];
    const { stdout } = await promisify(execFile)(PGBENCH, [...args, ...defines, '-f', script, dbUrl]);
    const tps = Number(/tps = ([\d.]+)/.exec(stdout)?.[1]);
    const latencyMs = Number(/latency average = ([\d.]+) ms/.exec(stdout)?.[1]);
    if (!Number.isFinite(tps)) throw new Error(`pgbench printed no tps:\n${stdout}`);
    return { tps, latencyMs, clients };
  };
  try {
    await run(WARMUP_S);
    return await run(seconds);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const loadBefore = loadavg()[0]!;
const testDb = await createTestDatabase();

/**
 * Every create updates the one wallet row; this machine's PostgreSQL runs with autovacuum=off, so its dead
 * versions would pile up across phases. Vacuum between phases, as autovacuum (once a minute) would.
 */
async function vacuumWallets(): Promise<void> {
  await testDb.db.pool.query('VACUUM wallets');
}
const prefix = `bench_${randomBytes(4).toString('hex')}`;
let cp: Started | undefined;
let baseline: Started | undefined;
try {
  cp = await startServer(['--import', '@s2s/telemetry/register', 'src/main.ts'], {
    NODE_ENV: 'development',
    DATABASE_URL: testDb.url,
    BUS_PREFIX: prefix,
    HTTP_PORT: '0',
    ADMIN_TOKEN: 'bench-admin-token',
    LOG_LEVEL,
    ...(POOL === undefined ? {} : { DB_POOL_SIZE: POOL }),
    ...(TELEMETRY ? {} : { OTEL_SDK_DISABLED: 'true' }),
    ...(CP_NODE_ARGS.length ? { NODE_ARGS: CP_NODE_ARGS.join(' ') } : {}),
  });
  baseline = await startServer([baselineServer], {});
  const cpUrl = `http://127.0.0.1:${cp.port}`;
  const key = await mintBenchKey(cpUrl);

  const common = { connections: CONNECTIONS };
  const results: [string, Result][] = [];
  results.push(['baseline: bare express GET', await run('baseline', { ...common, url: `http://127.0.0.1:${baseline.port}/` })]);
  results.push(['GET /v1/models', await run('models', { ...common, url: `${cpUrl}/v1/models` })]);
  const createInit = {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'local/echo-1', mode: 'speech_to_speech' }),
  };
  const first = await fetch(`${cpUrl}/v1/voice/sessions`, { ...createInit, headers: createInit.headers });
  if (first.status !== 201) throw new Error(`first create answered ${first.status}: ${await first.text()}`);
  const pool = Number(POOL ?? loadConfig({}).DB_POOL_SIZE);
  await vacuumWallets();
  const pg = await pgbenchCreates(testDb.url, key, pool, DURATION_S);
  await vacuumWallets();
  results.push([
    'POST /v1/voice/sessions',
    await run('create', {
      ...common,
      url: `${cpUrl}/v1/voice/sessions`,
      method: 'POST',
      headers: createInit.headers,
      body: createInit.body,
    }),
  ]);
  const RATE = Number(RATE_FLAG ?? Math.round(0.7 * pg.tps));
  await vacuumWallets();
  await constantRate(`${cpUrl}/v1/voice/sessions`, createInit, RATE, WARMUP_S); // warm-up of this client's own code
  const paced = await constantRate(`${cpUrl}/v1/voice/sessions`, createInit, RATE, DURATION_S);
  const { rows } = await testDb.db.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM voice_sessions');

  const base = results[0]![1].requests.average;
  const creates = results.find(([name]) => name === 'POST /v1/voice/sessions')![1];
  console.log(
    `\ncontrol-plane bench: ${new Date().toISOString()}, ${cpus().length} x ${cpus()[0]?.model ?? 'cpu'}, node ${process.version}`,
  );
  console.log(
    `${DURATION_S} s per run after a warm-up of ${WARMUP_S} s and at least ${WARMUP_REQUESTS} requests, ${CONNECTIONS} connections, DB pool ${POOL ?? 'default'}, LOG_LEVEL ${LOG_LEVEL}, ` +
      `telemetry ${TELEMETRY ? 'on' : 'off'}, 1-min load average ${loadBefore.toFixed(2)} before / ${loadavg()[0]!.toFixed(2)} after\n`,
  );
  console.log('| endpoint | req/s | p50 ms | p99 ms | vs baseline |');
  console.log('|---|---:|---:|---:|---:|');
  for (const [name, r] of results) {
    const ratio = r.requests.average / base;
    console.log(`| ${name} | ${Math.round(r.requests.average)} | ${r.latency.p50} | ${r.latency.p99} | ${ratio.toFixed(2)} |`);
  }
  console.log(
    `\ncreates vs PostgreSQL: pgbench ran the same create statement (prepared, ${pg.clients} clients = the DB pool) at ` +
      `${Math.round(pg.tps)} tps (latency average ${pg.latencyMs} ms); the control plane did ${Math.round(creates.requests.average)}/s ` +
      `= ${(creates.requests.average / pg.tps).toFixed(2)} x PostgreSQL (target >= 0.8)`,
  );
  console.log(`\nPOST /v1/voice/sessions at a fixed ${RATE} req/s for ${DURATION_S} s (open loop, latency from the scheduled send time):`);
  console.log('| sent | 201 | failed | req/s | p50 ms | p99 ms | max ms |');
  console.log('|---:|---:|---:|---:|---:|---:|---:|');
  console.log(`| ${paced.sent} | ${paced.ok} | ${paced.failed} | ${paced.reqPerSec} | ${paced.p50} | ${paced.p99} | ${paced.max} |`);
  console.log(`\nsessions created (warm-ups included): ${rows[0]?.n}`);
} finally {
  if (baseline) await stop(baseline);
  if (cp) await stop(cp);
  const bus = await connectBus({ url: process.env.NATS_URL ?? 'nats://127.0.0.1:4222', prefix });
  await bus.jsm.streams.delete(busSubjects(prefix).stream).catch(() => {});
  await bus.close();
  await testDb.drop();
}
