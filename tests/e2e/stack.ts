// End-to-end harness: the real processes (local provider, relay, control plane, billing), each started with
// `node --import tsx <main.ts>` over a fresh test database and a unique bus prefix, on ports they pick.
// (The tsx processes inherit NODE_OPTIONS=--conditions=@s2s/source from tap's test-env: sources, not dist.)
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createServer, type AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { connectBus, type Bus } from '@s2s/bus';
import { brokerHandoffs } from '@s2s/handoff/broker';
import { checkLedgerInvariants, createTestDatabase, type TestDatabase } from '@s2s/db/testing';
import { REALTIME_PROTOCOL, Wallet, type VoiceSession } from '@s2s/contract';
import { SEED_RATE } from '@s2s/core';
import { Client } from '@s2s/testing';
import type { Test } from 'tap';
import WebSocket from 'ws';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
// The services' `--import @s2s/telemetry/register`, by path: the root has no @s2s/telemetry of its own.
const TELEMETRY_REGISTER = new URL('../../packages/telemetry/src/register.ts', import.meta.url).href;
export const ADMIN_TOKEN = 'e2e-admin-token-0123456789abcdef';

export interface Teardown {
  teardown(fn: () => unknown): void;
}

export interface Service {
  name: string;
  child: ChildProcess;
  port: number;
  /** Every line the process wrote to stdout and stderr (JSON logs). */
  output: string[];
  exited: Promise<number | null>;
}

export interface Stack {
  db: TestDatabase;
  bus: Bus;
  prefix: string;
  provider: Service;
  relay: Service;
  controlPlane: Service;
  billing: Service;
  /** http://127.0.0.1:<port> of the control plane. */
  baseUrl: string;
  /** ws://127.0.0.1:<port>/v1/realtime of the relay. */
  relayUrl: string;
}

/** Spawns one service from its sources (through tsx) and resolves once it logged `listening`. */
function start(t: Teardown, name: string, script: string, env: Record<string, string>, listening: string, ipc = false): Promise<Service> {
  return spawnService(t, {
    ipc,
    name,
    node: process.execPath,
    // With telemetry on, as the services run: the loader hook lets express and pg be instrumented.
    args: ['--import', 'tsx', ...(env.OTEL_SDK_DISABLED === 'false' ? ['--import', TELEMETRY_REGISTER] : []), script],
    cwd: ROOT,
    env: { ...process.env, NODE_ENV: 'test', LOG_LEVEL: 'info', OTEL_SDK_DISABLED: 'true', ...env },
    listening,
  });
}

export interface ServiceCommand {
  name: string;
  /** The program: node, or a wrapper of it. */
  node: string;
  args: string[];
  cwd: string;
  /** The whole environment of the process. */
  env: Record<string, string | undefined>;
  /** The `msg` of the log line that says it is ready; its `port` (or `healthPort`) field is the port. */
  listening: string;
  /** An IPC channel to this process (the edge's connection handoff, as npm start gives the edge and relays). */
  ipc?: boolean;
}

/** Spawns a process (killed at teardown) and resolves once it logged `listening`, with the port it reported. */
export function spawnService(t: Teardown, { name, node, args, cwd, env, listening, ipc = false }: ServiceCommand): Promise<Service> {
  const child = spawn(node, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe', ...(ipc ? (['ipc'] as const) : [])] });
  t.teardown(async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
    await new Promise((resolve) => child.once('exit', resolve));
    clearTimeout(timer);
  });
  const output: string[] = [];
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return new Promise((resolve, reject) => {
    let buf = '';
    const onData = (chunk: Buffer) => {
      buf += chunk.toString();
      let nl: number;
      while ((nl = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        output.push(line);
        try {
          const o = JSON.parse(line) as { msg?: string; port?: number; healthPort?: number };
          const port = o.port ?? o.healthPort;
          if (o.msg === listening) resolve({ name, child, port: typeof port === 'number' ? port : 0, output, exited });
        } catch {
          // not a log line
        }
      }
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.once('exit', (code) => reject(new Error(`${name} exited (${code}) before it was ready:\n${output.join('\n')}`)));
  });
}

export async function startStack(
  t: Teardown,
  env: {
    relay?: Record<string, string>;
    billing?: Record<string, string>;
    controlPlane?: Record<string, string>;
    provider?: Record<string, string>;
  } = {},
): Promise<Stack> {
  const db = await createTestDatabase(t);
  const prefix = `e2e_${randomBytes(4).toString('hex')}`;
  const bus = await connectBus({ url: process.env.NATS_URL ?? 'nats://127.0.0.1:4222', prefix });
  t.teardown(async () => {
    await bus.jsm.streams.delete(bus.subjects.stream).catch(() => {});
    await bus.close();
  });
  const common = { DATABASE_URL: db.url, BUS_PREFIX: prefix };

  const provider = await start(
    t,
    'local-provider',
    'services/local-provider/src/main.ts',
    { LOCAL_PROVIDER_PORT: '0', ...env.provider },
    'local provider listening',
  );
  const relay = await start(
    t,
    'relay',
    'services/relay/src/main.ts',
    {
      ...common,
      RELAY_PORT: '0',
      RELAY_ID: `e2e-relay-${randomBytes(2).toString('hex')}`,
      LOCAL_PROVIDER_URL: `ws://127.0.0.1:${provider.port}/v1/realtime`,
      CHECKPOINT_INTERVAL_MS: '200',
      // Short leases, so that billing tells a killed relay from a live one well within END_WAIT_MS.
      RELAY_LEASE_RENEW_MS: '500',
      RELAY_LEASE_TTL_MS: '3000',
      ...env.relay,
    },
    'relay listening',
    // With an IPC channel, as npm start runs it: startEdge hands connections over to it.
    true,
  );
  const relayUrl = `ws://127.0.0.1:${relay.port}/v1/realtime`;
  const controlPlane = await start(
    t,
    'control-plane',
    'services/control-plane/src/main.ts',
    { ...common, HTTP_PORT: '0', ADMIN_TOKEN, REALTIME_PUBLIC_URL: relayUrl, END_WAIT_MS: '10000', ...env.controlPlane },
    'control plane listening',
  );
  const billing = await start(
    t,
    'billing',
    'services/billing/src/main.ts',
    { ...common, END_GRACE_MS: '1500', SWEEP_INTERVAL_MS: '500', RELAY_LEASE_TTL_MS: '3000', STORE_PROBE_MS: '500', ...env.billing },
    'billing consumer started',
  );
  return { db, bus, prefix, provider, relay, controlPlane, billing, baseUrl: `http://127.0.0.1:${controlPlane.port}`, relayUrl };
}

/** A second route for failover tests: another simulator process answering as an Azure OpenAI deployment. */
export const AZURE_KEY = 'azure-e2e-key-0123456789';
export function startAzureRoute(t: Teardown): Promise<Service> {
  return spawnService(t, {
    name: 'azure-provider',
    node: process.execPath,
    args: ['--import', 'tsx', 'services/local-provider/src/main.ts'],
    cwd: ROOT,
    env: {
      ...process.env,
      LOG_LEVEL: 'info',
      OTEL_SDK_DISABLED: 'true',
      LOCAL_PROVIDER_PORT: '0',
      LOCAL_PROVIDER_DIALECT: 'azure',
      LOCAL_PROVIDER_API_KEY: AZURE_KEY,
    },
    listening: 'local provider listening',
  });
}

/** The relay's environment that configures the Azure route of `startAzureRoute`. */
export function azureRouteEnv(azure: Service): Record<string, string> {
  return { AZURE_OPENAI_ENDPOINT: `http://127.0.0.1:${azure.port}`, AZURE_OPENAI_API_KEY: AZURE_KEY };
}

/** A catalog model served by the simulator (`keeper-1`) with the Azure route as its failover route. */
export function putFailoverModel(stack: Stack, id: string) {
  return api(stack, 'PUT', '/admin/v1/models', {
    admin: true,
    body: {
      id,
      display_name: 'Keeper',
      owned_by: 'acme',
      provider: 'local',
      provider_model: 'keeper-1',
      fallback_routes: [{ provider: 'azure', provider_model: 'keeper-eu' }],
      enabled: true,
      approved: true,
      pricing: SEED_RATE,
    },
  });
}

/** The relay's log lines saying a session moved to a new upstream connection, of one reason when given. */
export function movesOf(stack: Stack, reason?: 'deadline' | 'lost'): number {
  return stack.relay.output.filter(
    (l) => l.includes('"session moved to a new upstream connection"') && (reason === undefined || l.includes(`"reason":"${reason}"`)),
  ).length;
}

export async function api<T = unknown>(
  stack: Stack,
  method: string,
  path: string,
  opts: { body?: unknown; key?: string; admin?: boolean } = {},
): Promise<{ status: number; body: T; headers: Headers }> {
  const headers: Record<string, string> = {};
  if (opts.body !== undefined) headers['Content-Type'] = 'application/json';
  if (opts.key) headers.Authorization = `Bearer ${opts.key}`;
  if (opts.admin) headers.Authorization = `Bearer ${ADMIN_TOKEN}`;
  const res = await fetch(`${stack.baseUrl}${path}`, {
    method,
    headers,
    ...(opts.body !== undefined ? { body: JSON.stringify(opts.body) } : {}),
  });
  const text = await res.text();
  return { status: res.status, body: (text ? JSON.parse(text) : null) as T, headers: res.headers };
}

/** A free port on 127.0.0.1 (the edge logs the port it was given, so it cannot be asked for 0). */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/**
 * The edge (services/edge) in front of a stack: the HTTP API and /v1/realtime on one origin, as `npm start`
 * serves them; `tls` (PEM files) makes it https and wss. `origin` is http(s)://127.0.0.1:<port>. As in npm
 * start, without TLS it hands /v1/realtime connections over to the relay (this process brokering); with TLS it
 * proxies them.
 */
export async function startEdge(t: Teardown, stack: Stack, tls?: { cert: string; key: string }): Promise<Service & { origin: string }> {
  const port = await freePort();
  const edge = await start(
    t,
    'edge',
    'services/edge/src/main.ts',
    {
      HTTP_PORT: String(port),
      CONTROL_PLANE_URL: stack.baseUrl,
      RELAY_URLS: `http://127.0.0.1:${stack.relay.port}`,
      ...(tls ? { TLS_CERT_FILE: tls.cert, TLS_KEY_FILE: tls.key } : { RELAY_HANDOFF: 'ipc' }),
    },
    'edge listening',
    !tls,
  );
  if (!tls) brokerHandoffs(edge.child, [stack.relay.child]);
  return { ...edge, port, origin: `${tls ? 'https' : 'http'}://127.0.0.1:${port}` };
}

/**
 * Attaches `session` over svc-realtime-v1 with its owner's API key and waits for `session.created`; the
 * socket is closed at teardown.
 */
export async function attachSession(t: Teardown, session: VoiceSession, apiKey: string): Promise<Client> {
  const ws = new WebSocket(session.realtime.url, REALTIME_PROTOCOL, {
    headers: { Authorization: `Bearer ${apiKey}` },
    perMessageDeflate: false,
  });
  const client = new Client(ws);
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
  });
  t.teardown(() => client.close());
  await client.next('session.created');
  return client;
}

/**
 * After a settlement: the wallet that started with `startCents` was charged exactly `cents`, nothing is left
 * reserved, and the ledger's invariants hold over the whole database.
 */
export async function expectCharged(
  t: Pick<Test, 'same'>,
  stack: Stack,
  walletId: string,
  startCents: number,
  cents: number,
): Promise<void> {
  const wallet = Wallet.parse((await api(stack, 'GET', `/admin/v1/wallets/${walletId}`, { admin: true })).body);
  const left = startCents - cents;
  t.same(wallet, { id: walletId, balance_cents: left, reserved_cents: 0, available_cents: left }, `the wallet was charged ${cents} cents`);
  t.same(await checkLedgerInvariants(stack.db.db.pool), [], 'ledger invariants');
}
