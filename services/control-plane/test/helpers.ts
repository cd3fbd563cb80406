// Test harness: a control plane on port 0 over its own fresh database and its own bus prefix.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { connectBus, type Bus } from '@s2s/bus';
import { createDb, type DbHandle } from '@s2s/db';
import { createTestDatabase, type TestDatabase } from '@s2s/db/testing';
import { createLogger } from '@s2s/telemetry';
import { closedPort } from '@s2s/testing';
import { buildApp } from '../src/app.js';
import { loadConfig, type Config } from '../src/config.js';
import { createContext } from '../src/context.js';
import { seedCatalog } from '../src/domain/catalog.js';
import { createHttpServer } from '../src/server.js';

export interface TeardownHost {
  teardown(fn: () => unknown): void;
}

export const ADMIN_TOKEN = 'test-admin-token-0123456789';
export const REALTIME_BASE = 'wss://relay.test.example/v1/realtime';

export interface Harness {
  url: string;
  config: Config;
  /** The app's own pool. */
  db: DbHandle;
  testDb: TestDatabase;
  bus: Bus;
  /** Every JSON log line the app wrote. */
  logLines: string[];
  /** Moves the app's clock (expiry decisions) forward. */
  advanceClock(ms: number): void;
}

export interface HarnessOptions {
  env?: Record<string, string>;
  seed?: boolean;
  /** Replaces the app's database handle (e.g. one pointing at a closed port). */
  db?: DbHandle;
  /** A second control plane over this one's database and bus prefix (a replica); it drops neither. */
  replicaOf?: Harness;
}

export async function startControlPlane(t: TeardownHost, opts: HarnessOptions = {}): Promise<Harness> {
  const replicaOf = opts.replicaOf;
  const testDb = replicaOf?.testDb ?? (await createTestDatabase(t));
  const prefix = replicaOf?.config.BUS_PREFIX ?? `t_${randomBytes(4).toString('hex')}`;
  const config = loadConfig({
    NODE_ENV: 'test',
    DATABASE_URL: testDb.url,
    BUS_PREFIX: prefix,
    HTTP_PORT: '0',
    ADMIN_TOKEN,
    REALTIME_PUBLIC_URL: REALTIME_BASE,
    ...opts.env,
  });
  const db = opts.db ?? createDb(testDb.url, { max: 16 });
  const bus = await connectBus({ url: config.NATS_URL, prefix });
  const logLines: string[] = [];
  const logger = createLogger({
    service: 'control-plane',
    level: 'info',
    destination: { write: (line: string) => void logLines.push(line) },
  });
  let offsetMs = 0;
  const deps = { config, db, bus, logger, now: () => new Date(Date.now() + offsetMs) };
  if (opts.seed !== false && !opts.db && !replicaOf) await seedCatalog({ ctx: createContext(deps) });
  const server = createHttpServer(buildApp(deps), logger).listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;

  t.teardown(async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
    if (!replicaOf) await bus.jsm.streams.delete(bus.subjects.stream).catch(() => {});
    await bus.close();
    await db.close();
    if (!replicaOf) await testDb.drop();
  });
  return {
    url: `http://127.0.0.1:${port}`,
    config,
    db,
    testDb,
    bus,
    logLines,
    advanceClock: (ms) => {
      offsetMs += ms;
    },
  };
}

export interface ApiResponse<T = any> {
  status: number;
  headers: Headers;
  body: T;
  text: string;
}

export interface RequestOptions {
  headers?: Record<string, string>;
  /** Sent as JSON with Content-Type: application/json. */
  json?: unknown;
  /** Sent as is (set Content-Type yourself). */
  raw?: string | Buffer;
}

export async function api<T = any>(h: { url: string }, method: string, path: string, opts: RequestOptions = {}): Promise<ApiResponse<T>> {
  const headers: Record<string, string> = { ...opts.headers };
  let body: string | Buffer | undefined;
  if (opts.json !== undefined) {
    headers['content-type'] ??= 'application/json';
    body = JSON.stringify(opts.json);
  } else if (opts.raw !== undefined) {
    body = opts.raw;
  }
  const res = await fetch(`${h.url}${path}`, { method, headers, body });
  const text = await res.text();
  let parsed: unknown;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    parsed = undefined;
  }
  return { status: res.status, headers: res.headers, body: parsed as T, text };
}

export const adminHeaders = { authorization: `Bearer ${ADMIN_TOKEN}` };
export const bearer = (key: string) => ({ authorization: `Bearer ${key}` });

export interface IssuedTestKey {
  id: string;
  key: string;
  wallet_id: string;
  balance_cents: number;
}

export async function createKey(h: { url: string }, balanceCents: number): Promise<IssuedTestKey> {
  const res = await api<IssuedTestKey>(h, 'POST', '/admin/v1/keys', { headers: adminHeaders, json: { balance_cents: balanceCents } });
  if (res.status !== 201) throw new Error(`key creation failed: ${res.status} ${res.text}`);
  return res.body;
}

export const CREATE_BODY = Object.freeze({ model: 'local/echo-1', mode: 'speech_to_speech' });

export function createSession(h: { url: string }, key: string, opts: { body?: unknown; idempotencyKey?: string } = {}) {
  return api(h, 'POST', '/v1/voice/sessions', {
    headers: { ...bearer(key), ...(opts.idempotencyKey === undefined ? {} : { 'idempotency-key': opts.idempotencyKey }) },
    json: opts.body ?? CREATE_BODY,
  });
}

/** The preauthorization of local/echo-1 (seed pricing) for the default 10 minutes. */
export const ECHO_PREAUTH_CENTS = 161;

export async function walletRow(h: Harness, walletId: string): Promise<{ balance: number; reserved: number }> {
  const { rows } = await h.db.pool.query<{ balance: number; reserved: number }>(
    'SELECT balance_cents::float8 AS balance, reserved_cents::float8 AS reserved FROM wallets WHERE id = $1',
    [walletId],
  );
  if (!rows[0]) throw new Error(`no wallet ${walletId}`);
  return rows[0];
}

const repoRoot = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');

/** A billing consumer process (as `npm start` runs it) for this harness's database and prefix, killed at teardown. */
/**
 * A billing process (services/billing/src/main.ts, as `npm start` runs it) on the harness's database and bus
 * prefix. Resolves once it consumes: its health server answers only after the consumer and sweeper started, so
 * an end request made next is not left waiting on a process still compiling under load.
 */
export async function startBilling(t: TeardownHost, h: Harness, env: Record<string, string> = {}) {
  const healthPort = await closedPort();
  const child = spawn(process.execPath, ['--import', 'tsx', 'services/billing/src/main.ts'], {
    cwd: repoRoot,
    env: {
      ...process.env,
      NODE_ENV: 'test',
      DATABASE_URL: h.testDb.url,
      BUS_PREFIX: h.config.BUS_PREFIX,
      NATS_URL: h.config.NATS_URL,
      LOG_LEVEL: 'silent',
      OTEL_SDK_DISABLED: 'true',
      HEALTH_PORT: String(healthPort),
      ...env,
    },
    stdio: 'ignore',
  });
  let gone = false;
  const exited = new Promise<void>((resolve) => child.once('exit', () => ((gone = true), resolve())));
  t.teardown(async () => {
    child.kill('SIGKILL');
    await exited;
  });
  for (;;) {
    if (gone) throw new Error('the billing process exited before it was ready');
    const up = await fetch(`http://127.0.0.1:${healthPort}/healthz`).then(
      (r) => r.ok,
      () => false,
    );
    if (up) return child;
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** The count of `http_server_request_duration` for one route and status on a Prometheus page (0 when absent). */
export function durationCount(page: string, route: string, status: number): number {
  const line = page
    .split('\n')
    .find(
      (l) =>
        l.startsWith('http_server_request_duration_count{') &&
        l.includes(`http_route="${route}"`) &&
        l.includes(`http_response_status_code="${status}"`),
    );
  return line === undefined ? 0 : Number(line.split(' ').at(-1));
}
