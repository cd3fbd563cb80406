// Harness of the `npm start` tests: runs scripts/start.mjs where no PostgreSQL and no NATS answer (probe
// ports in 16000-16999 that nothing listens on), so it starts its embedded PostgreSQL and nats-server.
import { spawn, type ChildProcess } from 'node:child_process';
import { createConnection } from 'node:net';
import { fileURLToPath } from 'node:url';
import type { Teardown } from './stack.js';

const START = fileURLToPath(new URL('../../scripts/start.mjs', import.meta.url));
export const ADMIN_TOKEN = 'dev-admin-token';

/** Ten consecutive ports from `base`: probes, embedded servers, services (a second relay at relay + 100). */
export function portsFrom(base: number) {
  return {
    pgProbe: base,
    natsProbe: base + 1,
    pg: base + 2,
    nats: base + 3,
    http: base + 4,
    relay: base + 5,
    provider: base + 6,
    billing: base + 7,
    controlPlane: base + 8,
  };
}
export type Ports = ReturnType<typeof portsFrom>;

export function answers(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createConnection({ host: '127.0.0.1', port });
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(500, () => done(false));
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
  });
}

export interface Run {
  child: ChildProcess;
  /** Everything the start script and its children printed. */
  output: () => string;
  exited: Promise<number | null>;
  /** Resolves with the first match of `re` in the output; rejects if the script exits first. */
  waitFor(re: RegExp, timeoutMs?: number): Promise<RegExpMatchArray>;
}

/**
 * Starts `node scripts/start.mjs` in its own process group (every process it starts is in that group),
 * as `identity` when given; the teardown kills the whole group if anything is left.
 */
export function startScript(
  t: Teardown,
  ports: Ports,
  dataDir: string,
  identity: { uid?: number; gid?: number } = {},
  extraEnv: Record<string, string> = {},
): Run {
  const env: Record<string, string | undefined> = {
    ...process.env,
    DATABASE_URL: undefined,
    NATS_URL: undefined,
    ADMIN_TOKEN: undefined,
    REALTIME_PUBLIC_URL: undefined,
    LOCAL_PROVIDER_URL: undefined,
    BUS_PREFIX: undefined,
    HOME: dataDir,
    S2S_DATA_DIR: dataDir,
    S2S_START_PG_PROBE_PORT: String(ports.pgProbe),
    S2S_START_NATS_PROBE_PORT: String(ports.natsProbe),
    S2S_EMBEDDED_PG_PORT: String(ports.pg),
    S2S_EMBEDDED_NATS_PORT: String(ports.nats),
    HTTP_PORT: String(ports.http),
    RELAY_PORT: String(ports.relay),
    LOCAL_PROVIDER_PORT: String(ports.provider),
    BILLING_HEALTH_PORT: String(ports.billing),
    CONTROL_PLANE_PORT: String(ports.controlPlane),
    TLS_CERT_FILE: undefined,
    TLS_KEY_FILE: undefined,
    RELAY_COUNT: undefined,
    OTEL_SDK_DISABLED: 'true',
    LOG_LEVEL: 'warn',
    ...extraEnv,
  };
  for (const k of Object.keys(env)) if (env[k] === undefined) delete env[k];
  const child = spawn(process.execPath, [START], { env, detached: true, stdio: ['ignore', 'pipe', 'pipe'], ...identity });
  let output = '';
  const listeners = new Set<() => void>();
  const keep = (chunk: Buffer) => {
    output += chunk.toString('utf8');
    for (const l of listeners) l();
  };
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  t.teardown(async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    try {
      process.kill(-child.pid!, 'SIGKILL');
    } catch {
      /* already gone */
    }
    await exited;
  });
  return {
    child,
    output: () => output,
    exited,
    waitFor(re, timeoutMs = 150_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          const m = output.match(re);
          if (!m) return;
          finish();
          resolve(m);
        };
        const timer = setTimeout(() => {
          finish();
          reject(new Error(`no ${re} within ${timeoutMs / 1000} s; output:\n${output}`));
        }, timeoutMs);
        const onExit = (code: number | null) => {
          finish();
          reject(new Error(`start.mjs exited (${code}) before ${re}; output:\n${output}`));
        };
        const finish = () => {
          clearTimeout(timer);
          listeners.delete(check);
          child.off('exit', onExit);
        };
        listeners.add(check);
        child.once('exit', onExit);
        check();
      });
    },
  };
}

/** Stops the script as Ctrl-C would; resolves with its exit code. */
export async function stop(run: Run): Promise<number | null> {
  run.child.kill('SIGINT');
  return run.exited;
}
