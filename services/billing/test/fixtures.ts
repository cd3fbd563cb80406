// Test fixtures: rows made the way the control plane makes them (shared with bench/billing through
// @s2s/sessions/testing), usage published the way the relay publishes it, and a per-test harness (own
// database, own bus prefix, LIFO clean-up).
import { randomBytes } from 'node:crypto';
import { spawn, type ChildProcess } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Test } from 'tap';
import { connectBus, traceHeaders, type Bus } from '@s2s/bus';
import { encodeUsageCheckpoint, type UsageCheckpoint } from '@s2s/contract';
import { addUsage, usageCheckpointMsgId, usageOf, ZERO_USAGE, type Usage } from '@s2s/core';
import { createDb, type DbHandle } from '@s2s/db';
import { checkLedgerInvariants, createTestDatabase } from '@s2s/db/testing';
import { checkpoint } from '@s2s/sessions/testing';
import { createLogger, type Logger } from '@s2s/telemetry';
import { loadConfig, type BillingConfig } from '../src/config.js';
import { createBillingConsumer, type BillingConsumer, type BillingDeps } from '../src/consumer.js';

export { attach, checkpoint, createOwner, createTestSession, TEST_RATE, type Owner } from '@s2s/sessions/testing';

export const NATS_URL = process.env.NATS_URL ?? 'nats://127.0.0.1:4222';
const repoRoot = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');

/** preauthorizationCents(TEST_RATE, 10): 600 000 ms audio + 3000 in / 6000 out tokens + fee = 210 500 mc. */
export const TEST_PREAUTH_CENTS = 211;

type TapLike = Pick<Test, 'teardown' | 'same'>;

export interface Harness {
  url: string;
  /** The test's own connections (not shared with any consumer under test). */
  db: DbHandle;
  bus: Bus;
  prefix: string;
  logger: Logger;
  /** Runs at teardown, last registered first. */
  defer(fn: () => unknown): void;
}

export async function harness(t: TapLike): Promise<Harness> {
  const cleanups: (() => unknown)[] = [];
  t.teardown(async () => {
    for (const fn of cleanups.reverse()) await fn();
  });
  const testDb = await createTestDatabase();
  cleanups.push(() => testDb.drop());
  const prefix = `t_${randomBytes(4).toString('hex')}`;
  const bus = await connectBus({ url: NATS_URL, prefix, name: 'billing-test' });
  cleanups.push(async () => {
    await bus.jsm.streams.delete(bus.subjects.stream).catch(() => undefined);
    await bus.close();
  });
  const logger = createLogger({ service: 'billing-test', level: process.env.TEST_LOG_LEVEL ?? 'silent' });
  return { url: testDb.url, db: testDb.db, bus, prefix, logger, defer: (fn) => cleanups.push(fn) };
}

/** Billing configuration for tests: short grace, waits and backoffs. */
export function testConfig(h: Pick<Harness, 'url' | 'prefix'>, overrides: Record<string, string> = {}): BillingConfig {
  return loadConfig({ ...testEnv(h), ...overrides });
}

export function testEnv(h: Pick<Harness, 'url' | 'prefix'>): Record<string, string> {
  return {
    NODE_ENV: 'test',
    DATABASE_URL: h.url,
    NATS_URL,
    BUS_PREFIX: h.prefix,
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
    END_GRACE_MS: '400',
    SWEEP_INTERVAL_MS: '200',
    ACK_WAIT_MS: '5000',
    NAK_BASE_MS: '50',
    NAK_MAX_MS: '200',
    MAX_DELIVER: '5',
    OTEL_SDK_DISABLED: 'true',
  };
}

/** An in-process consumer with its own bus connection and pool, stopped at teardown. */
export async function startConsumer(
  h: Harness,
  config: BillingConfig,
  extra: Pick<BillingDeps, 'store' | 'busLink' | 'faults'> = {},
): Promise<{ consumer: BillingConsumer; bus: Bus; db: DbHandle }> {
  const bus = await connectBus({ url: NATS_URL, prefix: h.prefix, name: 'billing-under-test' });
  const db = createDb(h.url, { max: 4 });
  const consumer = createBillingConsumer({ db, bus, config, logger: h.logger, ...extra });
  h.defer(async () => {
    await consumer.stop();
    await bus.close();
    await db.close();
  });
  await consumer.start();
  return { consumer, bus, db };
}

/**
 * `node --import tsx services/billing/src/main.ts` as a real child process; with `fault`, the test entry
 * point `test/fault-main.ts`, the same process with that crash point injected.
 */
export function spawnBilling(
  h: Harness,
  env: Record<string, string> = {},
  fault?: 'exit_after_commit' | 'exit_after_settle',
): ChildProcess & { exited: Promise<number | null> } {
  const entry = fault ? ['services/billing/test/fault-main.ts', fault] : ['services/billing/src/main.ts'];
  const child = spawn(process.execPath, ['--import', 'tsx', ...entry], {
    cwd: repoRoot,
    env: { ...process.env, ...testEnv(h), ...env },
    stdio: ['ignore', 'ignore', process.env.TEST_LOG_LEVEL ? 'inherit' : 'ignore'],
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code, signal) => resolve(signal ? 128 + 9 : code)));
  h.defer(async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGKILL');
      await exited;
    }
  });
  return Object.assign(child, { exited });
}

/** A checkpoint's counters; those left out are 0. */
export type Counters = Partial<Usage>;

/** Cumulative checkpoints of one attachment: `steps` increments, seq 1..n, the last one `final` if asked. */
export function history(sessionId: string, attachmentId: string, steps: Counters[], final = true): UsageCheckpoint[] {
  let acc: Usage = ZERO_USAGE;
  return steps.map((d, i) => {
    acc = addUsage(acc, usageOf(d));
    return checkpoint(sessionId, attachmentId, i + 1, acc, final && i === steps.length - 1);
  });
}

/** Publishes checkpoints as a relay does: the contract's encoder, the Msg-Id of their attachment and seq. */
export function publish(bus: Bus, checkpoints: UsageCheckpoint[]): Promise<unknown[]> {
  return Promise.all(
    checkpoints.map((c) =>
      bus.js.publish(bus.subjects.usageCheckpoint(c.session_id), encodeUsageCheckpoint(c), {
        msgID: usageCheckpointMsgId(c),
        headers: traceHeaders(),
      }),
    ),
  );
}

export async function waitFor<T>(what: string, check: () => Promise<T | undefined | false>, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await check();
    if (v !== undefined && v !== false) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

export interface SessionRow {
  status: string;
  settled_at: Date | null;
  billed_cents: number;
  reserved_cents: number;
  audio_in_ms: number;
  audio_out_ms: number;
  input_audio_tokens: number;
  output_audio_tokens: number;
  end_cause: string | null;
}

export async function sessionRow(db: DbHandle, id: string): Promise<SessionRow> {
  const { rows } = await db.pool.query<SessionRow>(
    `SELECT status, settled_at, billed_cents, reserved_cents, audio_in_ms::float8 AS audio_in_ms, audio_out_ms::float8 AS audio_out_ms,
            input_audio_tokens::float8 AS input_audio_tokens, output_audio_tokens::float8 AS output_audio_tokens, end_cause
       FROM voice_sessions WHERE id = $1`,
    [id],
  );
  if (!rows[0]) throw new Error(`no session ${id}`);
  return rows[0];
}

export function waitSettled(db: DbHandle, id: string, timeoutMs?: number): Promise<SessionRow> {
  return waitFor(
    `settlement of ${id}`,
    async () => {
      const row = await sessionRow(db, id);
      return row.settled_at ? row : undefined;
    },
    timeoutMs,
  );
}

export async function walletOf(db: DbHandle, walletId: string): Promise<{ balance: number; reserved: number; charges: number }> {
  const { rows } = await db.pool.query<{ balance: number; reserved: number; charges: number }>(
    `SELECT w.balance_cents::float8 AS balance, w.reserved_cents::float8 AS reserved,
            (SELECT count(*) FROM ledger_entries l WHERE l.wallet_id = w.id AND l.kind = 'charge')::float8 AS charges
       FROM wallets w WHERE w.id = $1`,
    [walletId],
  );
  if (!rows[0]) throw new Error(`no wallet ${walletId}`);
  return rows[0];
}

/** The ledger invariants of decisions.md, over the whole test database. */
export async function assertLedger(t: TapLike, db: DbHandle): Promise<void> {
  t.same(await checkLedgerInvariants(db.pool), [], 'ledger invariants hold');
}

export async function count(db: DbHandle, sql: string, values: unknown[] = []): Promise<number> {
  const { rows } = await db.pool.query<{ n: number }>(`SELECT (${sql})::float8 AS n`, values);
  return rows[0]?.n ?? 0;
}

/** What a relay does every RELAY_LEASE_RENEW_MS: its lease to now() + `ttlMs` (negative: already expired). */
export async function renewLease(h: Pick<Harness, 'db'>, relayId: string, ttlMs: number): Promise<void> {
  await h.db.pool.query(
    `INSERT INTO relay_leases (relay_id, expires_at) VALUES ($1, now() + make_interval(secs => $2::float8 / 1000))
     ON CONFLICT (relay_id) DO UPDATE SET expires_at = EXCLUDED.expires_at, renewed_at = now()`,
    [relayId, ttlMs],
  );
}
