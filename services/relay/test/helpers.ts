import { WebRtcEndpoint, type WebRtcEndpointOptions } from '@s2s/webrtc';
import { randomBytes } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { connectBus, subscribeMessages, type Bus } from '@s2s/bus';
import { REALTIME_PROTOCOL, type BusMessage, type Rate, type RealtimeSessionSettings, type UsageCheckpoint } from '@s2s/contract';
import { newId, SEED_RATE, type SessionRecord } from '@s2s/core';
import { createSession } from '@s2s/sessions';
import type { DbHandle } from '@s2s/db';
import { createTestDatabase, createWalletAndKey, insertCurrentRate } from '@s2s/db/testing';
import {
  pcmFrames,
  pcmSilence,
  pcmTone,
  startLocalProvider,
  type LocalProvider,
  type LocalProviderOptions,
  type ReceivedClientEvent,
} from '@s2s/local-provider';
import { createLogger, createMetrics, type Metrics } from '@s2s/telemetry';
import WebSocket from 'ws';
import { buildRelay, type RelayApp } from '../src/server/app.js';
import { loadConfig, type Config } from '../src/config.js';
import { createProviderOpener } from '../src/upstream/provider-opener.js';

export const TEST_POLICY = { preauthMinutes: 10, idleTimeoutSeconds: 300, maxSeconds: 3600 };

export interface Teardown {
  teardown(fn: () => unknown): void;
}

export function testPrefix(): string {
  return `t_${randomBytes(4).toString('hex')}`;
}

export async function testBus(t: Teardown, prefix = testPrefix()): Promise<Bus> {
  const bus = await connectBus({ url: 'nats://127.0.0.1:4222', prefix });
  t.teardown(async () => {
    await bus.jsm.streams.delete(bus.subjects.stream).catch(() => {});
    await bus.close();
  });
  return bus;
}

export function testLogger() {
  return createLogger({ service: 'relay-test', level: process.env.TEST_LOG_LEVEL ?? 'silent' });
}

export interface RelayEnv {
  db: DbHandle;
  dbUrl: string;
  bus: Bus;
  sim: LocalProvider;
  config: Config;
  app: RelayApp;
  /** ws://127.0.0.1:<port>/v1/realtime */
  url: string;
  /** The relay's own metrics (a standalone meter): `metrics.scrape()` is what its `/metrics` serves. */
  metrics: Metrics;
  /** Checkpoints seen on the bus, in arrival order. */
  checkpoints: UsageCheckpoint[];
  endRequests: BusMessage[];
  /** Every event the simulator received from the relay. */
  simEvents: ReceivedClientEvent[];
  /** Another relay process in the same deployment (same db, bus, simulator); `faults` wraps its db or bus. */
  startRelay(
    overrides?: Record<string, string>,
    faults?: RelayFaults,
  ): Promise<{ app: RelayApp; url: string; config: Config; metrics: Metrics; webrtc: WebRtcEndpoint }>;
  /** The relay's WebRTC media termination (POST /v1/realtime/calls), announcing 127.0.0.1. */
  webrtc: WebRtcEndpoint;
}

/** Fault injection for one relay: its view of the database or the bus, wrapped. */
export interface RelayFaults {
  db?: (db: DbHandle) => DbHandle;
  bus?: (bus: Bus) => Bus;
}

/** One relay on port 0 with its own database, bus prefix and simulator, all cleaned up in t.teardown. */
export async function setupRelay(
  t: Teardown,
  env: Record<string, string> = {},
  simOptions: Pick<LocalProviderOptions, 'maxConnectionMs' | 'capWarningMs'> = {},
  webrtcTiming: Pick<WebRtcEndpointOptions, 'connectTimeoutMs' | 'livenessMs' | 'failAfterMs' | 'maxMessageBytes'> = {},
): Promise<RelayEnv> {
  const { db, url: dbUrl } = await createTestDatabase(t);
  const bus = await testBus(t);
  const simEvents: ReceivedClientEvent[] = [];
  const sim = await startLocalProvider({ port: 0, ...simOptions, onClientEvent: (e) => simEvents.push(e) });
  t.teardown(() => sim.close());
  const checkpoints: UsageCheckpoint[] = [];
  const endRequests: BusMessage[] = [];
  const sub = subscribeMessages(bus.nc, `${bus.subjects.usageCheckpointAll}`, (m) => {
    if (m.type === 'usage.checkpoint') checkpoints.push(m);
  });
  const sub2 = subscribeMessages(bus.nc, bus.subjects.endRequestedAll, (m) => endRequests.push(m));
  t.teardown(() => {
    sub.unsubscribe();
    sub2.unsubscribe();
  });

  const startRelay = async (overrides: Record<string, string> = {}, faults: RelayFaults = {}) => {
    const config = loadConfig({
      NODE_ENV: 'test',
      DATABASE_URL: dbUrl,
      BUS_PREFIX: bus.subjects.stream.replace(/_EVENTS$/, '').toLowerCase(),
      RELAY_PORT: '0',
      RELAY_ID: `relay-${randomBytes(3).toString('hex')}`,
      LOCAL_PROVIDER_URL: sim.url,
      CHECKPOINT_INTERVAL_MS: '100',
      RECONCILE_INTERVAL_MS: '60000',
      RESPONSE_GRACE_MS: '3000',
      PROVIDER_CONNECT_TIMEOUT_MS: '2000',
      ...env,
      ...overrides,
    });
    const logger = testLogger();
    const metrics = createMetrics({ serviceName: 'relay' });
    t.teardown(() => metrics.shutdown());
    const webrtc = await WebRtcEndpoint.start({ port: 0, announcedAddresses: ['127.0.0.1'], ...webrtcTiming });
    t.teardown(() => webrtc.close());
    const app = buildRelay({
      webrtc,
      metrics,
      config,
      db: faults.db ? faults.db(db) : db,
      bus: faults.bus ? faults.bus(bus) : bus,
      logger,
      providers: createProviderOpener(config, logger),
    });
    await new Promise<void>((resolve) => app.server.listen(0, '127.0.0.1', resolve));
    t.teardown(() => app.close());
    const port = (app.server.address() as AddressInfo).port;
    return { app, url: `ws://127.0.0.1:${port}/v1/realtime`, config, metrics, webrtc };
  };
  const first = await startRelay();
  return {
    db,
    dbUrl,
    bus,
    sim,
    config: first.config,
    app: first.app,
    url: first.url,
    metrics: first.metrics,
    webrtc: first.webrtc,
    checkpoints,
    endRequests,
    simEvents,
    startRelay,
  };
}

// ---- SQL fixtures ----

export interface KeyFixture {
  secret: string;
  keyId: string;
  walletId: string;
}

/** A wallet credited by an operator (ledger row included, so the ledger invariants hold) and a key on it. */
export async function createKey(db: DbHandle, balanceCents: number, opts: { revoked?: boolean } = {}): Promise<KeyFixture> {
  return createWalletAndKey(db.pool, { balanceCents, ...opts });
}

export const DEFAULT_RATE: Rate = SEED_RATE;

const CAPABILITIES = {
  speech_to_speech: true,
  server_vad: true,
  barge_in: true,
  input_transcription: 'optional',
  output_transcription: 'optional',
};
const AUDIO = {
  input: { type: 'audio/pcm', encoding: 'pcm16le', sample_rate_hz: 24000, channels: 1 },
  output: { type: 'audio/pcm', encoding: 'pcm16le', sample_rate_hz: 24000, channels: 1 },
};

/** A listed catalog model with its current rate snapshot. */
export async function createModel(
  db: DbHandle,
  opts: { id: string; provider?: string; providerModel?: string; rate?: Rate; approved?: boolean },
): Promise<{ id: string; rateId: string; rate: Rate }> {
  const rate = opts.rate ?? DEFAULT_RATE;
  const rateId = newId('rate');
  await db.pool.query(
    `INSERT INTO catalog_models (id, display_name, owned_by, provider, provider_model, enabled, approved, capabilities, audio, modalities)
     VALUES ($1, $1, 'test', $2, $3, true, $4, $5, $6, $7)`,
    [
      opts.id,
      opts.provider ?? 'local',
      opts.providerModel ?? 'vad-1',
      opts.approved ?? true,
      JSON.stringify(CAPABILITIES),
      JSON.stringify(AUDIO),
      JSON.stringify({ input: ['audio'], output: ['audio'] }),
    ],
  );
  await insertCurrentRate(db.pool, { rateId, modelId: opts.id, rate });
  return { id: opts.id, rateId, rate };
}

/** A session made by the real create path (core createSession). */
export async function newSession(db: DbHandle, key: KeyFixture, model: string): Promise<SessionRecord> {
  const { session } = await createSession({
    ctx: { db },
    input: {
      key: { keyId: key.keyId, walletId: key.walletId },
      request: { model, mode: 'speech_to_speech' },
      traceId: randomBytes(16).toString('hex'),
      policy: TEST_POLICY,
    },
  });
  return session;
}

/** A session as POST /v1/realtime/client_secrets makes it: ends with its socket, settings kept. */
export async function browserSession(
  db: DbHandle,
  key: KeyFixture,
  model: string,
  clientSecretSettings: RealtimeSessionSettings = { instructions: 'Be brief.' },
): Promise<SessionRecord> {
  const { session } = await createSession({
    ctx: { db },
    input: {
      key: { keyId: key.keyId, walletId: key.walletId },
      request: { model, mode: 'speech_to_speech' },
      clientSecretSettings,
      traceId: 'a'.repeat(32),
      policy: TEST_POLICY,
    },
  });
  return session;
}

/** A session with a chosen preauthorization (e.g. a tiny one for the budget test), reserved like a real one. */
export async function insertSession(
  db: DbHandle,
  key: KeyFixture,
  model: { id: string; rateId: string },
  preauthCents: number,
): Promise<string> {
  const id = newId('vs');
  await db.pool.query('UPDATE wallets SET reserved_cents = reserved_cents + $2 WHERE id = $1', [key.walletId, preauthCents]);
  await db.pool.query(
    `INSERT INTO voice_sessions (id, key_id, wallet_id, model_id, rate_snapshot_id, status, preauthorized_cents, reserved_cents,
                                 trace_id, idle_timeout_seconds, max_ends_at)
     VALUES ($1, $2, $3, $4, $5, 'ready', $6, $6, $7, 300, now() + interval '1 hour')`,
    [id, key.keyId, key.walletId, model.id, model.rateId, preauthCents, randomBytes(16).toString('hex')],
  );
  return id;
}

export async function sessionRow(db: DbHandle, id: string) {
  const { rows } = await db.pool.query<{
    status: string;
    activated_at: Date | null;
    end_requested_at: Date | null;
    end_cause: string | null;
    terminal_status: string | null;
    last_activity_at: Date;
  }>('SELECT status, activated_at, end_requested_at, end_cause, terminal_status, last_activity_at FROM voice_sessions WHERE id = $1', [id]);
  return rows[0];
}

export async function countRows(db: DbHandle, table: 'voice_sessions' | 'session_attachments'): Promise<number> {
  const { rows } = await db.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${table}`);
  return rows[0]?.n ?? 0;
}

export async function walletOf(db: DbHandle, walletId: string): Promise<{ balance: number; reserved: number }> {
  const { rows } = await db.pool.query<{ balance: number; reserved: number }>(
    'SELECT balance_cents::int AS balance, reserved_cents::int AS reserved FROM wallets WHERE id = $1',
    [walletId],
  );
  return rows[0] ?? { balance: -1, reserved: -1 };
}

// ---- audio ----

// The PCM fixtures are the simulator package's (one implementation for every test).

/** PCM16LE mono 24 kHz: a sine of `ms` milliseconds (loud enough for the simulator's VAD). */
export function tone(ms: number, hz = 440, amplitude = 8000): Buffer {
  return pcmTone(ms, { frequencyHz: hz, amplitude });
}

export const silence = pcmSilence;

/** 20 ms frames. */
export const frames = pcmFrames;

// ---- realtime client ----

export { Client, eventually, sleep, type ServerEventLike } from '@s2s/testing';
import { Client, eventually as eventuallyOf, sleep as sleepFor, type ServerEventLike } from '@s2s/testing';

export function attachUrl(base: string, sessionId: string): string {
  return `${base}?session_id=${encodeURIComponent(sessionId)}`;
}

/** Attaches and waits for session.created and conversation.created. */
export async function attach(
  url: string,
  secret: string,
): Promise<{ client: Client; created: ServerEventLike; conversation: ServerEventLike }> {
  const ws = new WebSocket(url, REALTIME_PROTOCOL, { headers: { Authorization: `Bearer ${secret}` }, perMessageDeflate: false });
  const client = new Client(ws);
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('unexpected-response', (_req, res) => reject(new Error(`attach refused: ${res.statusCode}`)));
    ws.once('error', reject);
  });
  const created = await client.next();
  const conversation = await client.next();
  return { client, created, conversation };
}

export interface Refusal {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: { error: { type: string; code: string; message: string; request_id: string } };
}

/** An upgrade the relay must refuse before upgrading: its HTTP status, headers and ErrorResponse body. */
export function refused(
  url: string,
  opts: { secret?: string; protocol?: string | null; headers?: Record<string, string> } = {},
): Promise<Refusal> {
  const protocols = opts.protocol === null ? [] : [opts.protocol ?? REALTIME_PROTOCOL];
  const ws = new WebSocket(url, protocols, {
    headers: { ...(opts.secret ? { Authorization: `Bearer ${opts.secret}` } : {}), ...opts.headers },
  });
  return new Promise((resolve, reject) => {
    ws.on('open', () => {
      ws.terminate();
      reject(new Error('upgrade was accepted'));
    });
    ws.on('error', () => {});
    ws.on('unexpected-response', (_req, res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (text += c));
      res.on('end', () => {
        try {
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body: JSON.parse(text) });
        } catch (err) {
          reject(err);
        }
      });
    });
  });
}

/** The value of the first series `name` on a Prometheus scrape whose labels include `labels` (0 when absent). */
export function series(page: string, name: string, labels: Record<string, string> = {}): number {
  for (const line of page.split('\n')) {
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+(\S+)/.exec(line);
    if (!m || m[1] !== name) continue;
    if (Object.entries(labels).every(([k, v]) => (m[2] ?? '').includes(`${k}="${v}"`))) return Number(m[3]);
  }
  return 0;
}

/** Streams `ms` of a tone in 20 ms frames, in real time, and waits for the echo model's delta of each frame. */
export async function streamEchoed(client: Client, ms: number): Promise<void> {
  const audio = frames(tone(ms));
  for (const f of audio) {
    client.append(f);
    await sleepFor(20);
  }
  await eventuallyOf(
    () => client.events.filter((e) => e.type === 'response.output_audio.delta').length,
    (n) => n === audio.length,
  );
}
