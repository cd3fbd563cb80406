// Harness of the `npm start` tests: runs scripts/start.mjs where no PostgreSQL and no NATS answer (probe
// ports in 16000-16999 that nothing listens on), so it starts its embedded PostgreSQL and nats-server.
// A run is started with `env -i` and the environment written here: tap's NODE_OPTIONS (its hooks, in this
// checkout) must not reach it, and `privateCopy` gives it a workspace in a 0700 folder, as a fresh clone
// under /root or in `mktemp -d` is.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { createConnection } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Teardown } from './stack.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
export const ADMIN_TOKEN = 'dev-admin-token';

export interface Identity {
  uid: number;
  gid: number;
}

/** uid and gid of an OS user. */
export function identityOf(user: string): Identity {
  return {
    uid: Number(execFileSync('id', ['-u', user], { encoding: 'utf8' })),
    gid: Number(execFileSync('id', ['-g', user], { encoding: 'utf8' })),
  };
}

/**
 * This workspace (sources, node_modules, .tools) copied as hard links into a fresh folder of mode 0700, which
 * only its owner enters: `owner`, who also gets every directory in it, or the user running the tests. The
 * files stay shared and read-only to `owner`; the copy is removed at teardown. Returns the copy's root.
 */
export function privateCopy(t: Teardown, owner?: Identity): string {
  const top = mkdtempSync(join(tmpdir(), 's2s-clone-'));
  t.teardown(() => rmSync(top, { recursive: true, force: true }));
  const root = join(top, 'gateway');
  const entries = readdirSync(ROOT).filter((e) => e !== '.git' && e !== '.data');
  execFileSync('mkdir', ['-m', '0700', root]);
  execFileSync('cp', ['-al', ...entries.map((e) => join(ROOT, e)), root]);
  if (owner) execFileSync('find', [top, '-type', 'd', '-exec', 'chown', `${owner.uid}:${owner.gid}`, '{}', '+']);
  return root;
}

/** The node binary to run `root`'s scripts with: this one, or its copy when it lives in this workspace. */
function nodeFor(root: string): string {
  const inside = relative(ROOT, process.execPath);
  return inside.startsWith('..') ? process.execPath : join(root, inside);
}

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

export interface StartOptions {
  /** The workspace to run (a `privateCopy`); this one by default. */
  root?: string;
  /** The OS user to run as (needs root). */
  identity?: Identity;
  env?: Record<string, string>;
}

/**
 * Starts `node scripts/start.mjs` of `root` in its own process group (every process it starts is in that
 * group), with `env -i` and only the environment below; the teardown kills the whole group if anything is left.
 */
export function startScript(
  t: Teardown,
  ports: Ports,
  dataDir: string,
  { root = ROOT, identity, env: extraEnv = {} }: StartOptions = {},
): Run {
  const node = nodeFor(root);
  const env: Record<string, string> = {
    PATH: `${dirname(node)}:${process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin'}`,
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
    OTEL_SDK_DISABLED: 'true',
    LOG_LEVEL: 'warn',
    ...extraEnv,
  };
  const assignments = Object.entries(env).map(([k, v]) => `${k}=${v}`);
  const child = spawn('env', ['-i', ...assignments, node, join(root, 'scripts', 'start.mjs')], {
    cwd: root,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
    ...identity,
  });
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
