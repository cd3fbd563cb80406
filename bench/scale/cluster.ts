// The processes of a scale run, each pinned to cores of its own with taskset: PostgreSQL, nats-server, control
// planes, a relay and the local provider (the simulator the relay talks to). `Kit` says where their programs are:
// this repository (sources through tsx, Debian's PostgreSQL and nats-server) or an unpacked pack (bench/scale/pack.ts).
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chownSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import pg from 'pg';
import { freePort, pgUser, sleep, waitFor } from '@s2s/chaos';

export type ServiceName = 'control-plane' | 'relay' | 'local-provider';

/** Where a run finds its programs. */
export interface Kit {
  /** How to start a service: a program and its arguments, from `cwd`. */
  service(name: ServiceName): { cmd: string; args: string[]; cwd: string };
  /** Folder of initdb and postgres. */
  pgBin: string;
  natsServer: string;
  /** pgbench, or null: the run then uses its Node runner of the statement (load.ts). */
  pgbench: string | null;
  /** Applies the schema to a database. */
  migrate(url: string): Promise<void>;
}

/** Which cores each role runs on (taskset lists). */
export interface CorePlan {
  cores: number;
  postgres: string;
  nats: string;
  /** One core per control plane. */
  planes: string[];
  relay: string;
  /** The load generator (and the simulator, and pgbench's client). */
  load: string;
  /** True when there were fewer cores than roles: some share a core and the figures mean little. */
  shared: boolean;
}

/**
 * The layout of issue 28's 16-core run: PostgreSQL on 6 cores, NATS on 1, one core per control plane (4), the
 * relay on 1, the load on the rest (4). Other core counts keep those shares; below 8 cores roles share cores.
 */
export function planCores(cores: number, planes = Math.max(1, Math.round((cores * 4) / 16))): CorePlan {
  const pgCores = Math.max(1, Math.round((cores * 6) / 16));
  let next = 0;
  const take = (n: number): number[] => Array.from({ length: n }, () => next++ % cores);
  const postgres = take(pgCores);
  const nats = take(1);
  const planeCores = Array.from({ length: planes }, () => take(1));
  const relay = take(1);
  const rest = cores - next;
  const load = rest > 0 ? take(rest) : [cores - 1];
  return {
    cores,
    postgres: postgres.join(','),
    nats: nats.join(','),
    planes: planeCores.map((c) => c.join(',')),
    relay: relay.join(','),
    load: load.join(','),
    shared: next > cores || rest <= 0,
  };
}

const children = new Set<ChildProcess>();

/** Every process a run started, ended (their process groups): on the way out, however the run ends. */
export async function stopAll(): Promise<void> {
  const all = [...children];
  for (const c of all) signalGroup(c, 'SIGTERM');
  await Promise.race([Promise.all(all.map(exited)), sleep(5000)]);
  for (const c of all) signalGroup(c, 'SIGKILL');
}
process.once('exit', () => {
  for (const c of children) signalGroup(c, 'SIGKILL');
});

function signalGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return;
  try {
    process.kill(-child.pid, signal);
  } catch {
    child.kill(signal);
  }
}

function exited(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => child.once('exit', () => resolve()));
}

/** Starts `cmd args` pinned to `cores`, in a process group of its own; keeps its last output for errors. */
function startPinned(
  cores: string,
  cmd: string,
  args: string[],
  opts: { cwd: string; env?: Record<string, string>; user?: { uid: number; gid: number } },
): { child: ChildProcess; output: () => string; lines: (fn: (line: string) => void) => void } {
  const child = spawn('taskset', ['-c', cores, cmd, ...args], {
    cwd: opts.cwd,
    env: { ...process.env, ...opts.env },
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
    ...(opts.user ?? {}),
  });
  children.add(child);
  child.once('exit', () => children.delete(child));
  let tail = '';
  const listeners: ((line: string) => void)[] = [];
  for (const stream of [child.stdout!, child.stderr!]) {
    createInterface({ input: stream }).on('line', (line) => {
      tail = `${tail}${line}\n`.slice(-4000);
      for (const fn of listeners) fn(line);
    });
  }
  return { child, output: () => tail, lines: (fn) => listeners.push(fn) };
}

/** A private PostgreSQL: initdb into `dir`, started on `cores`; resolves with its server URL (database postgres). */
export async function startPostgres(kit: Kit, dir: string, cores: string, settings: string[]): Promise<string> {
  const user = pgUser();
  const data = join(dir, 'pg');
  mkdirSync(data, { mode: 0o700 });
  if (user) chownSync(data, user.uid, user.gid);
  const init = spawnSync(
    join(kit.pgBin, 'initdb'),
    ['-D', data, '-A', 'trust', '-U', 'postgres', '-E', 'UTF8', '--locale=C', '--no-sync', '--no-instructions'],
    { cwd: dir, encoding: 'utf8', ...(user ?? {}), timeout: 120_000 },
  );
  if (init.status !== 0) throw new Error(`initdb failed (${init.status}): ${init.stderr}${init.error ? String(init.error) : ''}`);
  const port = await freePort();
  const args = ['-D', data, '-p', String(port), '-c', 'listen_addresses=127.0.0.1', '-c', `unix_socket_directories=${data}`];
  for (const s of settings) args.push('-c', s);
  const proc = startPinned(cores, join(kit.pgBin, 'postgres'), args, { cwd: dir, ...(user ? { user } : {}) });
  const url = `postgres://postgres@127.0.0.1:${port}/postgres`;
  const ready = await waitFor(
    async () => {
      if (proc.child.exitCode !== null) throw new Error(`postgres exited:\n${proc.output()}`);
      const c = new pg.Client({ connectionString: url, connectionTimeoutMillis: 1000 });
      c.on('error', () => {});
      try {
        await c.connect();
        return true;
      } catch {
        return false;
      } finally {
        await c.end().catch(() => {});
      }
    },
    60_000,
    200,
  );
  if (!ready) throw new Error(`postgres not ready within 60 s:\n${proc.output()}`);
  return url;
}

/** A private nats-server with JetStream (store in `dir`) on `cores`; resolves with its URL. */
export async function startNats(kit: Kit, dir: string, cores: string): Promise<string> {
  const port = await freePort();
  const store = join(dir, 'nats');
  mkdirSync(store, { recursive: true });
  const proc = startPinned(cores, kit.natsServer, ['-js', '-a', '127.0.0.1', '-p', String(port), '-sd', store], { cwd: dir });
  const ready = await new Promise<boolean>((resolve) => {
    proc.lines((line) => {
      if (line.includes('Server is ready')) resolve(true);
    });
    proc.child.once('exit', () => resolve(false));
    setTimeout(() => resolve(false), 30_000).unref();
  });
  if (!ready) throw new Error(`nats-server did not start:\n${proc.output()}`);
  return `nats://127.0.0.1:${port}`;
}

/** A service on `cores`; resolves with the port of its first log line that names one. */
export async function startService(kit: Kit, name: ServiceName, cores: string, env: Record<string, string>): Promise<number> {
  const { cmd, args, cwd } = kit.service(name);
  const proc = startPinned(cores, cmd, args, { cwd, env });
  return new Promise<number>((resolve, reject) => {
    proc.lines((line) => {
      if (!line.startsWith('{')) return;
      try {
        const port = (JSON.parse(line) as { port?: unknown }).port;
        if (typeof port === 'number') resolve(port);
      } catch {
        // not a log line
      }
    });
    proc.child.once('exit', (code) => reject(new Error(`${name} exited (${code}):\n${proc.output()}`)));
  });
}
