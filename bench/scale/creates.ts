// `npm run bench -- scale:creates`: the create statement alone under pgbench, over many wallets, at two client
// counts (issue 28, item 5): its rate at 128 clients must be at least 0.8 x its rate at 32. While each run goes,
// pg_stat_activity's wait events and pg_locks' waits are sampled, to show what serializes it.
// --db=URL: an existing server (a database of its own is made on it); default: a private PostgreSQL 15.
// --wallets=64 --clients=32,128 --duration=10 (s per run, after a 3 s warm-up); --setup-sql=<file>: SQL run on
// the seeded database before the runs (an experiment: an index or a constraint dropped).
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { Postgres, TempDir } from '@s2s/chaos';
import { ensureDatabase, migrate } from '@s2s/db';
import { createWalletAndKey, insertCurrentRate } from '@s2s/db/testing';
import { createStatement } from '@s2s/sessions';
import { newId, RATE_FIELDS } from '@s2s/core';

const flag = (name: string) => process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
const WALLETS = Number(flag('wallets') ?? 64);
const CLIENTS = (flag('clients') ?? '32,128').split(',').map(Number);
const DURATION_S = Number(flag('duration') ?? 10);
const WARMUP_S = 3;
const PGBENCH = process.env.PGBENCH ?? 'pgbench';
/** The catalog model the seeded wallets create sessions of. */
export const MODEL = 'bench/scale-1';
const SETUP_SQL = flag('setup-sql');

export interface CreateRun {
  clients: number;
  tps: number;
  latencyMs: number;
  /** Samples of backends running the statement, by wait event (`CPU` when none), as shares of all samples. */
  waits: [string, number][];
  /** Lock waits seen in pg_locks (not granted), by lock type, summed over the samples. */
  lockWaits: [string, number][];
}

/** One seeded wallet's key: its secret (for the API) and the hash the create statement looks it up by. */
export interface SeededKey {
  secret: string;
  hash: string;
}

/**
 * A database with the catalog model (`MODEL`) and `wallets` wallets, each with one key. `opts.migrate` applies the
 * schema (default: @s2s/db's dbmate; the packed scale bench applies the same files itself, bench/scale/schema.ts).
 */
export async function seed(url: string, wallets: number, opts: { migrate?: (url: string) => Promise<void> } = {}): Promise<SeededKey[]> {
  await ensureDatabase(url);
  await (opts.migrate ?? migrate)(url);
  const pool = new pg.Pool({ connectionString: url, max: 4 });
  try {
    const format = { type: 'audio/pcm', encoding: 'pcm16le', sample_rate_hz: 24000, channels: 1 };
    // A database seeded before (bench/scale run on a database of running services) keeps its model and rate.
    const { rowCount } = await pool.query(
      `INSERT INTO catalog_models (id, display_name, owned_by, provider, provider_model, enabled, approved, capabilities, audio, modalities)
       VALUES ($1, 'Scale', 'bench', 'local', 'echo', true, true, $2, $3, $4) ON CONFLICT (id) DO NOTHING`,
      [MODEL, { speech_to_speech: true }, { input: format, output: format }, { input: ['audio'], output: ['audio'] }],
    );
    const rate = Object.fromEntries(RATE_FIELDS.map((f) => [f, f === 'per_minute' ? 600 : 0])) as Record<
      (typeof RATE_FIELDS)[number],
      number
    >;
    if (rowCount) await insertCurrentRate(pool, { rateId: newId('rate'), modelId: MODEL, rate });
    const keys: SeededKey[] = [];
    for (let i = 0; i < wallets; i++) {
      const { keyId, secret } = await createWalletAndKey(pool, { balanceCents: 2 ** 50 });
      const { rows } = await pool.query<{ secret_hash: string }>('SELECT secret_hash FROM api_keys WHERE id = $1', [keyId]);
      keys.push({ secret, hash: rows[0]!.secret_hash });
    }
    // An experiment on the schema (e.g. an index or a constraint dropped), run once the database is seeded.
    if (SETUP_SQL) await pool.query(readFileSync(SETUP_SQL, 'utf8'));
    return keys;
  } finally {
    await pool.end();
  }
}

/** The create statement as `createSession` sends it for a key's secret hash, without an Idempotency-Key. */
export function benchStatement(secretHash: string, sessionId: string, rateId: string): ReturnType<typeof createStatement> {
  return createStatement(
    {
      key: { secretHash },
      request: { model: MODEL, mode: 'speech_to_speech' },
      traceId: '0'.repeat(32),
      // The control plane's defaults, except the key limits: no wallet may run into them during the runs.
      policy: {
        preauthMinutes: 10,
        idleTimeoutSeconds: 300,
        maxSeconds: 3600,
        syncCommit: false,
        keyLimits: { maxLiveSessions: 2 ** 31 - 1, maxCreatesPerMinute: 2 ** 31 - 1 },
      },
    },
    sessionId,
    { rateId, preauthCents: 61 },
    null,
  );
}

export interface CreateLocks {
  /** Relations one create holds locked once it has run (in its transaction). */
  relations: number;
  /** Of its locks, those in the shared lock table rather than on the backend's fast path. */
  shared: number;
}

/**
 * The relation locks of one create at its end, in its transaction, after seven on the same connection (the
 * cached generic plan pgbench runs too). Its peak, with the indexes it writes still open, is what
 * packages/sessions/test/create-locks.test.ts measures and bounds.
 */
export async function locksOfOneCreate(url: string, secretHash: string): Promise<CreateLocks> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    const { rows } = await c.query<{ rate: string }>('SELECT current_rate_id AS rate FROM catalog_models WHERE id = $1', [MODEL]);
    let locks: { relation: string; fastpath: boolean }[] = [];
    for (let run = 0; run < 8; run++) {
      await c.query('BEGIN');
      await c.query(benchStatement(secretHash, newId('vs'), rows[0]!.rate));
      locks = (
        await c.query<{ relation: string; fastpath: boolean }>(
          `SELECT relation::text, fastpath FROM pg_locks
            WHERE pid = pg_backend_pid() AND locktype = 'relation' AND relation <> 'pg_locks'::regclass`,
        )
      ).rows;
      await c.query('ROLLBACK');
    }
    return { relations: new Set(locks.map((l) => l.relation)).size, shared: locks.filter((l) => !l.fastpath).length };
  } finally {
    await c.end();
  }
}

/** The create statement as `createSession` sends it, as a pgbench script: a random wallet's key, a fresh id. */
export function pgbenchScript(hashes: string[]): { script: string; defines: string[] } {
  const statement = benchStatement('HASH', 'SID', 'RATE');
  const defines: string[] = [];
  const keys = `(ARRAY[${hashes.map((h) => `'${h}'`).join(',')}])[:k]`;
  const sql = statement.text.replace(/\$(\d+)\b/g, (_m, n: string) => {
    const value = statement.values[Number(n) - 1];
    if (value === null) return 'NULL';
    if (value === 'HASH') return keys;
    if (value === 'SID') return `('vs_scale_' || :sid)`;
    if (value === 'RATE') return `(SELECT current_rate_id FROM catalog_models WHERE id = '${MODEL}')`;
    defines.push('-D', `p${n}=${String(value)}`);
    return `:p${n}`;
  });
  const script = `\\set k random(1, ${hashes.length})\n\\set sid random(1, 999999999999999)\n${sql.trim()};\n`;
  return { script, defines };
}

async function sampleWaits(
  url: string,
  stop: { done: boolean },
): Promise<{ waits: Map<string, number>; locks: Map<string, number>; samples: number }> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  const waits = new Map<string, number>();
  const locks = new Map<string, number>();
  let samples = 0;
  try {
    while (!stop.done) {
      const { rows } = await c.query<{ w: string; n: number }>(
        `SELECT coalesce(wait_event_type || ':' || wait_event, 'CPU') AS w, count(*)::int AS n
           FROM pg_stat_activity WHERE state = 'active' AND application_name = 'pgbench' GROUP BY 1`,
      );
      for (const r of rows) waits.set(r.w, (waits.get(r.w) ?? 0) + r.n);
      const l = await c.query<{ t: string; n: number }>(
        `SELECT locktype || coalesce(':' || relation::regclass::text, '') || ':' || mode AS t, count(*)::int AS n FROM pg_locks WHERE NOT granted GROUP BY 1`,
      );
      for (const r of l.rows) locks.set(r.t, (locks.get(r.t) ?? 0) + r.n);
      samples++;
      await new Promise((r) => setTimeout(r, 100));
    }
  } finally {
    await c.end();
  }
  return { waits, locks, samples };
}

export async function runCreates(
  url: string,
  clients: number[],
  wallets: number,
  seconds: number,
): Promise<{ runs: CreateRun[]; locks: CreateLocks }> {
  const hashes = (await seed(url, wallets)).map((k) => k.hash);
  const locks = await locksOfOneCreate(url, hashes[0]!);
  const { script, defines } = pgbenchScript(hashes);
  const dir = mkdtempSync(join(tmpdir(), 'scale-pgbench-'));
  const file = join(dir, 'create.sql');
  writeFileSync(file, script);
  const admin = new pg.Client({ connectionString: url });
  await admin.connect();
  const runs: CreateRun[] = [];
  try {
    for (const n of clients) {
      const pgbench = (duration: number) =>
        promisify(execFile)(
          PGBENCH,
          ['-n', '-M', 'prepared', '-c', String(n), '-j', String(Math.min(n, 4)), '-T', String(duration), ...defines, '-f', file, url],
          {
            maxBuffer: 16 * 1024 * 1024,
          },
        );
      await admin.query('VACUUM ANALYZE wallets');
      await pgbench(WARMUP_S);
      await admin.query('VACUUM ANALYZE wallets');
      const stop = { done: false };
      const sampling = sampleWaits(url, stop);
      const { stdout } = await pgbench(seconds).finally(() => (stop.done = true));
      const { waits, locks, samples } = await sampling;
      const tps = Number(/tps = ([\d.]+)/.exec(stdout)?.[1]);
      if (!Number.isFinite(tps)) throw new Error(`pgbench printed no tps:\n${stdout}`);
      const total = [...waits.values()].reduce((a, b) => a + b, 0) || 1;
      runs.push({
        clients: n,
        tps,
        latencyMs: Number(/latency average = ([\d.]+) ms/.exec(stdout)?.[1]),
        waits: [...waits].sort((a, b) => b[1] - a[1]).map(([w, c]) => [w, c / total]),
        lockWaits: [...locks].sort((a, b) => b[1] - a[1]).map(([w, c]) => [w, c / Math.max(1, samples)]),
      });
    }
  } finally {
    await admin.end();
    rmSync(dir, { recursive: true, force: true });
  }
  return { runs, locks };
}

export function printCreates({ runs, locks }: { runs: CreateRun[]; locks: CreateLocks }, wallets: number): void {
  console.log(
    `\ncreate statement under pgbench, ${wallets} wallets, ${DURATION_S} s per run, ${cpus().length} cores, load ${loadavg()[0]!.toFixed(2)}`,
  );
  console.log(
    `one create holds ${locks.relations} relations locked at its end, ${locks.shared} of its locks in the shared lock table (fast path: 16 relations)`,
  );
  console.log('| clients | tps | latency ms | backends by wait event (share of samples) | lock waits (mean per sample) |');
  console.log('|---:|---:|---:|---|---|');
  for (const r of runs) {
    const w = r.waits
      .slice(0, 5)
      .map(([k, v]) => `${k} ${(100 * v).toFixed(0)}%`)
      .join(', ');
    const l =
      r.lockWaits
        .slice(0, 4)
        .map(([k, v]) => `${k} ${v.toFixed(1)}`)
        .join(', ') || 'none';
    console.log(`| ${r.clients} | ${Math.round(r.tps)} | ${r.latencyMs} | ${w} | ${l} |`);
  }
  const first = runs[0];
  const last = runs[runs.length - 1];
  if (first && last && first !== last) {
    console.log(
      `\nrate at ${last.clients} clients / rate at ${first.clients} clients = ${(last.tps / first.tps).toFixed(2)} (target >= 0.8)`,
    );
  }
}

function onDatabase(serverUrl: string, database: string): string {
  const u = new URL(serverUrl);
  u.pathname = `/${database}`;
  return u.toString();
}

// Run as a script (not when bench/scale/main.ts, or its bundle, imports it).
if (process.argv[1]?.endsWith('/scale/creates.ts')) {
  const dbFlag = flag('db');
  const dir = dbFlag ? undefined : new TempDir('scale');
  const server = dir ? await Postgres.create(dir, { settings: ['max_connections=300', 'shared_buffers=256MB'] }) : undefined;
  const url = dbFlag ? onDatabase(dbFlag, `s2s_scale_${Date.now()}`) : server!.url('s2s_scale');
  try {
    printCreates(await runCreates(url, CLIENTS, WALLETS, DURATION_S), WALLETS);
  } finally {
    await server?.stop('fast');
    dir?.remove();
  }
}
