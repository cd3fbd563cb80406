#!/usr/bin/env node
// `npm start`: runs the whole gateway on one machine. Uses DATABASE_URL / NATS_URL when set, else the
// local PostgreSQL and NATS when they answer, else starts its own; migrates; runs every service; prints
// where it listens, the development admin token and a ready-made demo key.
// One public origin (decisions.md, "Running it"): the edge (services/edge, http-proxy-3) listens on HTTP_PORT
// and sends /v1/realtime to the relays (RELAY_COUNT of them), everything else to the control plane; with
// TLS_CERT_FILE and TLS_KEY_FILE it serves https and wss. Without TLS the edge hands each /v1/realtime
// connection over to a relay once its request is read (@s2s/handoff), this process carrying it from the edge
// to the relay: frames then go client ↔ relay, not through the edge.
// Knobs (for tests and crowded machines): S2S_START_PG_PROBE_PORT, S2S_START_NATS_PROBE_PORT (where to look
// for running servers), S2S_EMBEDDED_PG_PORT, S2S_EMBEDDED_NATS_PORT (where to start ours), S2S_DATA_DIR,
// S2S_EMBEDDED_PG_DIR, S2S_EMBEDDED_PG_HOME (as root: the postgres user's folder, see embedded-postgres.mjs).
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { createConnection } from 'node:net';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { brokerHandoffs } from '@s2s/handoff/broker';
import { startEmbeddedPostgres } from './embedded-postgres.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const env = { ...process.env };
const dataDir = resolve(env.S2S_DATA_DIR ?? join(root, '.data'));
const pgProbePort = Number(env.S2S_START_PG_PROBE_PORT ?? 5432);
const natsProbePort = Number(env.S2S_START_NATS_PROBE_PORT ?? 4222);
// Sources run through tsx; the condition makes workspace packages resolve to src/ rather than dist/.
const DEV_NODE_ARGS = ['--conditions=@s2s/source', '--import', 'tsx'];
const children = [];
let stopping = false;

const say = (msg) => process.stdout.write(`[start] ${msg}\n`);

function answers(host, port, timeoutMs = 500) {
  return new Promise((resolve) => {
    const socket = createConnection({ host, port });
    const done = (ok) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(timeoutMs, () => done(false));
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
  });
}

async function waitFor(check, what, timeoutMs = 30_000) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return;
    if (stopping) throw new Error(`stopped while waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`${what} did not come up within ${timeoutMs / 1000} s`);
}

async function ensurePostgres() {
  if (env.DATABASE_URL) return say(`PostgreSQL: using DATABASE_URL`);
  if (await answers('127.0.0.1', pgProbePort)) {
    env.DATABASE_URL = `postgres://postgres@127.0.0.1:${pgProbePort}/s2s_gateway`;
    return say(`PostgreSQL: using the server on 127.0.0.1:${pgProbePort}`);
  }
  const port = Number(env.S2S_EMBEDDED_PG_PORT ?? 54329);
  const dir = resolve(env.S2S_EMBEDDED_PG_DIR ?? join(dataDir, 'postgres'));
  say(`PostgreSQL: none answers on 127.0.0.1:${pgProbePort}; starting an embedded one on ${port}`);
  const pg = await startEmbeddedPostgres({ dir, port, strictDir: Boolean(env.S2S_EMBEDDED_PG_DIR) });
  children.push({ name: 'postgres', stop: () => pg.stop() });
  say(
    pg.dir === dir
      ? `PostgreSQL: data in ${pg.dir}`
      : `PostgreSQL: data in ${pg.dir} (the OS user postgres cannot reach ${dir}; S2S_EMBEDDED_PG_HOME moves it)`,
  );
  env.DATABASE_URL = pg.url;
}

async function ensureNats() {
  if (env.NATS_URL) return say('NATS: using NATS_URL');
  if (await answers('127.0.0.1', natsProbePort)) {
    env.NATS_URL = `nats://127.0.0.1:${natsProbePort}`;
    return say(`NATS: using the server on 127.0.0.1:${natsProbePort} (it must have JetStream enabled)`);
  }
  const which = spawnSync('sh', ['-c', 'command -v nats-server || ls /usr/sbin/nats-server 2>/dev/null'], { encoding: 'utf8' });
  const bin = which.stdout.trim().split('\n')[0];
  if (!bin) {
    throw new Error(
      `NATS with JetStream is needed and none answers on 127.0.0.1:${natsProbePort}, and nats-server is not installed.\n` +
        '  Install it (Debian/Ubuntu: `apt-get install nats-server`; others: https://docs.nats.io), or run one\n' +
        '  (`docker run -p 4222:4222 nats:2.9 -js`), or point NATS_URL at an existing server, then run npm start again.',
    );
  }
  const port = Number(env.S2S_EMBEDDED_NATS_PORT ?? 4222);
  const storeDir = join(dataDir, 'nats');
  mkdirSync(storeDir, { recursive: true });
  say(`NATS: starting ${bin} -js on 127.0.0.1:${port} (store in ${storeDir})`);
  start('nats', bin, ['-a', '127.0.0.1', '-p', String(port), '-js', '-sd', storeDir], { capture: true });
  await waitFor(() => answers('127.0.0.1', port), 'nats-server');
  env.NATS_URL = `nats://127.0.0.1:${port}`;
}

// `capture` keeps the last output in memory (printed if the process dies) instead of passing it through;
// `ipc` gives the child an IPC channel (connection handoffs).
function start(name, cmd, args, { capture = false, ipc = false, extraEnv = {}, cwd = root } = {}) {
  const child = spawn(cmd, args, {
    cwd,
    env: { ...env, ...extraEnv },
    stdio: ['ignore', capture ? 'pipe' : 'inherit', capture ? 'pipe' : 'inherit', ...(ipc ? ['ipc'] : [])],
  });
  let output = '';
  const keep = (chunk) => {
    output = (output + chunk).slice(-8_000);
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  const entry = { name, child, stop: () => child.kill('SIGTERM') };
  children.push(entry);
  child.on('error', (err) => {
    if (stopping) return;
    say(`${name} could not be started: ${err.message}; stopping the gateway`);
    shutdown(1);
  });
  child.on('exit', (code, signal) => {
    if (stopping) return;
    say(`${name} exited (${signal ?? code}); stopping the gateway`);
    if (output) process.stderr.write(`[start] ${name} printed:\n${output.trimEnd()}\n`);
    shutdown(1);
  });
  return entry;
}

// Each service runs from its own folder so the telemetry hook resolves; the hook must load before
// express, http and pg are imported for ESM instrumentation to see them.
function runService(name, extraEnv, { ipc = false } = {}) {
  const cwd = join(root, 'services', name);
  return start(name, process.execPath, [...DEV_NODE_ARGS, '--import', '@s2s/telemetry/register', 'src/main.ts'], { extraEnv, cwd, ipc });
}

async function shutdown(code = 0) {
  if (stopping) return;
  stopping = true;
  say('stopping');
  // Services first (they drain), then the infrastructure they use.
  for (const c of [...children].reverse()) {
    try {
      await c.stop();
      if (c.child && c.child.exitCode === null) {
        await new Promise((r) => {
          const timer = setTimeout(() => {
            c.child.kill('SIGKILL');
            r();
          }, 15_000);
          c.child.once('exit', () => {
            clearTimeout(timer);
            r();
          });
        });
      }
    } catch {
      /* already gone */
    }
  }
  process.exit(code);
}

async function main() {
  process.on('SIGINT', () => shutdown(0));
  process.on('SIGTERM', () => shutdown(0));
  say(`Node.js ${process.versions.node} (${process.execPath})`);
  mkdirSync(dataDir, { recursive: true });
  await ensurePostgres();
  await ensureNats();

  const httpPort = Number(env.HTTP_PORT ?? 8080);
  const relayPort = Number(env.RELAY_PORT ?? 8081);
  const controlPlanePort = Number(env.CONTROL_PLANE_PORT ?? 8083);
  const providerPort = Number(env.LOCAL_PROVIDER_PORT ?? 8090);
  const relayCount = Math.max(1, Number(env.RELAY_COUNT ?? 1));
  // Relay i listens on RELAY_PORT + 100 * i, clear of the other services' defaults.
  const relayPorts = Array.from({ length: relayCount }, (_, i) => relayPort + 100 * i);
  const tls = Boolean(env.TLS_CERT_FILE && env.TLS_KEY_FILE);
  if (Boolean(env.TLS_CERT_FILE) !== Boolean(env.TLS_KEY_FILE)) throw new Error('TLS_CERT_FILE and TLS_KEY_FILE go together');
  if (!env.ADMIN_TOKEN && env.NODE_ENV !== 'production') env.ADMIN_TOKEN = 'dev-admin-token';
  env.REALTIME_PUBLIC_URL ??= `${tls ? 'wss' : 'ws'}://127.0.0.1:${httpPort}/v1/realtime`;
  env.LOCAL_PROVIDER_URL ??= `ws://127.0.0.1:${providerPort}/v1/realtime`;

  say('migrating the database');
  const migrated = spawnSync(process.execPath, [...DEV_NODE_ARGS, join(root, 'packages/db/src/migrate-cli.ts')], {
    cwd: root,
    env,
    stdio: 'inherit',
  });
  if (migrated.status !== 0) throw new Error('database migration failed');

  runService('local-provider', { LOCAL_PROVIDER_PORT: String(providerPort) });
  runService('billing', { HEALTH_PORT: String(Number(env.BILLING_HEALTH_PORT ?? 8082)) });
  // Handoff needs plain TCP at the edge: with TLS the edge proxies upgrades (the TLS state lives there).
  const handoff = !tls;
  const relays = relayPorts.map((port, i) =>
    runService('relay', { RELAY_PORT: String(port), RELAY_ID: `relay-${i + 1}-${process.pid}` }, { ipc: handoff }),
  );
  runService('control-plane', { HTTP_PORT: String(controlPlanePort) });
  const edge = runService(
    'edge',
    {
      HTTP_PORT: String(httpPort),
      CONTROL_PLANE_URL: `http://127.0.0.1:${controlPlanePort}`,
      RELAY_URLS: relayPorts.map((p) => `http://127.0.0.1:${p}`).join(','),
      RELAY_HANDOFF: handoff ? 'ipc' : 'off',
    },
    { ipc: handoff },
  );
  if (handoff)
    brokerHandoffs(
      edge.child,
      relays.map((r) => r.child),
    );

  // Readiness is read from the services themselves (a self-signed certificate would stop fetch at the edge).
  const internal = `http://127.0.0.1:${controlPlanePort}`;
  const base = `${tls ? 'https' : 'http'}://127.0.0.1:${httpPort}`;
  await waitFor(
    async () => {
      try {
        if (!(await fetch(`${internal}/readyz`)).ok) return false;
        for (const port of relayPorts) if (!(await fetch(`http://127.0.0.1:${port}/readyz`)).ok) return false;
        return await answers('127.0.0.1', httpPort);
      } catch {
        return false;
      }
    },
    'the gateway',
    60_000,
  );

  const res = await fetch(`${internal}/admin/v1/keys`, {
    method: 'POST',
    headers: { authorization: `Bearer ${env.ADMIN_TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify({ balance_cents: 10_000, label: 'npm start demo key' }),
  });
  const demo = res.ok ? await res.json() : null;
  say('');
  say(`gateway ready: HTTP API ${base}  (realtime: ${env.REALTIME_PUBLIC_URL}, ${relayCount} relay${relayCount > 1 ? 's' : ''})`);
  say(`web console: ${base}/console/`);
  if (env.NODE_ENV !== 'production') say(`admin token (development): ${env.ADMIN_TOKEN}`);
  if (demo) say(`demo key (shown once, wallet ${demo.wallet_id} with ${demo.balance_cents} cents): ${demo.key}`);
  say(`try: curl ${tls ? '-k ' : ''}${base}/v1/models`);
  say(`     S2S_BASE_URL=${base} S2S_API_KEY=<demo key> npx s2s talk --tone --out answer.wav`);
  say('Ctrl-C stops everything.');
}

main().catch((err) => {
  // Libraries throw strings and errors without messages too: print whatever the cause is.
  const cause = err instanceof Error ? err.message || err.stack || err.name : String(err);
  process.stderr.write(`[start] failed: ${cause}\n`);
  if (err?.output) process.stderr.write(`[start] its output:\n${String(err.output).trimEnd()}\n`);
  shutdown(1);
});
