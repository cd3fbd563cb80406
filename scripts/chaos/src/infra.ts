// The campaign's own NATS and PostgreSQL, in a temporary directory on ports of the chaos range, so that it
// can stop, kill and restart them: the shared servers (5432, 4222) are never touched.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chmodSync, chownSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { connect as connectTcp, createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import pg from 'pg';

/** Fixed ports of the campaign (NATS, PostgreSQL) come from this range only (`--ports` moves it). */
export const PORT_RANGE = { min: 17000, max: 17999 };

/** Another range for the campaign's NATS and PostgreSQL, e.g. an engineer's own on a shared machine. */
export function setPortRange(min: number, max: number): void {
  if (!Number.isInteger(min) || !Number.isInteger(max) || min < 1024 || max > 65535 || max - min < 3) {
    throw new Error(`invalid port range ${min}-${max}: at least 4 ports within 1024-65535`);
  }
  PORT_RANGE.min = min;
  PORT_RANGE.max = max;
}
const PG_BIN = process.env.CHAOS_PG_BIN ?? '/usr/lib/postgresql/15/bin';
const NATS_BIN = process.env.CHAOS_NATS_BIN ?? '/usr/sbin/nats-server';
/** Debian's PgBouncer (`apt-get install pgbouncer`; .ci/run installs it when missing). */
export const PGBOUNCER_BIN = process.env.CHAOS_PGBOUNCER_BIN ?? '/usr/sbin/pgbouncer';

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Polls `check` every `everyMs` until it returns true; false once `timeoutMs` passed. */
export async function waitFor(check: () => Promise<boolean> | boolean, timeoutMs: number, everyMs = 100): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check()) return true;
    if (Date.now() >= deadline) return false;
    await sleep(everyMs);
  }
}

function portIsFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = createServer();
    srv.once('error', () => resolve(false));
    srv.listen(port, '127.0.0.1', () => srv.close(() => resolve(true)));
  });
}

const taken = new Set<number>();

/** A port of the chaos range that nothing listens on (random start, bounded probing). */
export async function freePort(): Promise<number> {
  const span = PORT_RANGE.max - PORT_RANGE.min + 1;
  const start = Math.floor(Math.random() * span);
  for (let i = 0; i < Math.min(200, span); i++) {
    const port = PORT_RANGE.min + ((start + i * 7) % span);
    if (taken.has(port)) continue;
    if (await portIsFree(port)) {
      taken.add(port);
      return port;
    }
  }
  throw new Error(`no free port in ${PORT_RANGE.min}-${PORT_RANGE.max}`);
}

/** Every process the campaign started, so that a failure still ends them all (by process group). */
const live = new Set<ChildProcess>();

const tempDirs = new Set<TempDir>();
let exitHook = false;

/** On any exit of this process (a test timeout included), no child and no temp dir is left behind. */
function hookExit(): void {
  if (exitHook) return;
  exitHook = true;
  process.once('exit', () => {
    killAll();
    for (const dir of tempDirs) dir.remove();
  });
}

export function track(child: ChildProcess): void {
  hookExit();
  live.add(child);
  child.once('exit', () => live.delete(child));
}

/** SIGKILL to the process group of every child still running. */
export function killAll(): void {
  for (const child of live) killGroup(child, 'SIGKILL');
}

export function killGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return;
  try {
    process.kill(-child.pid, signal);
  } catch {
    try {
      child.kill(signal);
    } catch {
      // already gone
    }
  }
}

export function exited(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => child.once('exit', () => resolve()));
}

/** SIGKILL to the group of `child` (if any), resolved once it exited. */
async function killNow(child: ChildProcess | null): Promise<void> {
  if (!child) return;
  killGroup(child, 'SIGKILL');
  await exited(child);
}

/** Signals the group, then SIGKILLs it if it is still there after `graceMs`. */
export async function stopGroup(child: ChildProcess, signal: NodeJS.Signals, graceMs: number): Promise<void> {
  killGroup(child, signal);
  const timer = setTimeout(() => killGroup(child, 'SIGKILL'), graceMs);
  await exited(child);
  clearTimeout(timer);
}

/** The OS user PostgreSQL runs as: `postgres` when we are root (it refuses root), ourselves otherwise. */
export function pgUser(): { uid: number; gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined;
  const uid = Number(spawnSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).stdout.trim());
  const gid = Number(spawnSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).stdout.trim());
  if (!Number.isInteger(uid) || !Number.isInteger(gid) || uid <= 0) throw new Error('running as root needs a `postgres` OS user');
  return { uid, gid };
}

export class TempDir {
  readonly path: string;
  constructor(label: string) {
    this.path = mkdtempSync(join(tmpdir(), `s2s-chaos-${label}-`));
    // PostgreSQL runs as another user and must reach its data directory inside.
    chmodSync(this.path, 0o755);
    hookExit();
    tempDirs.add(this);
  }
  remove(): void {
    rmSync(this.path, { recursive: true, force: true });
    tempDirs.delete(this);
  }
}

/** A private nats-server with JetStream; stopped and restarted on the same port and store directory. */
export class Nats {
  private child: ChildProcess | null = null;
  readonly url: string;
  private constructor(
    readonly port: number,
    private readonly storeDir: string,
    private readonly logLines: string[],
    /** More arguments (a cluster node's name and routes). */
    private readonly extraArgs: string[] = [],
  ) {
    this.url = `nats://127.0.0.1:${port}`;
  }

  static async create(dir: TempDir): Promise<Nats> {
    const storeDir = join(dir.path, 'nats');
    mkdirSync(storeDir, { recursive: true });
    const nats = new Nats(await freePort(), storeDir, []);
    await nats.start();
    return nats;
  }

  /** One node of a cluster: its server name, its route port and the routes to the others. */
  static node(port: number, storeDir: string, name: string, clusterPort: number, routes: number[]): Nats {
    mkdirSync(storeDir, { recursive: true });
    const args = ['-n', name, '--cluster_name', 'chaos', '--cluster', `nats://127.0.0.1:${clusterPort}`];
    args.push('--routes', routes.map((p) => `nats://127.0.0.1:${p}`).join(','));
    return new Nats(port, storeDir, [], args);
  }

  get running(): boolean {
    return this.child !== null;
  }

  async start(): Promise<void> {
    if (this.child) return;
    const args = ['-js', '-a', '127.0.0.1', '-p', String(this.port), '-sd', this.storeDir, ...this.extraArgs];
    const child = spawn(NATS_BIN, args, {
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    track(child);
    this.child = child;
    const ready = new Promise<void>((resolve, reject) => {
      const onData = (chunk: Buffer) => {
        const text = chunk.toString();
        this.logLines.push(text);
        if (this.logLines.length > 200) this.logLines.shift();
        if (text.includes('Server is ready')) resolve();
      };
      child.stdout!.on('data', onData);
      child.stderr!.on('data', onData);
      child.once('exit', (code) => reject(new Error(`nats-server exited (${code}):\n${this.logLines.join('')}`)));
    });
    const timeout = sleep(30_000).then(() => {
      throw new Error('nats-server not ready within 30 s');
    });
    await Promise.race([ready, timeout]);
    child.once('exit', () => {
      if (this.child === child) this.child = null;
    });
  }

  /** SIGTERM (a clean shutdown, so JetStream keeps what it acknowledged) and wait for the exit. */
  async stop(): Promise<void> {
    const child = this.child;
    if (!child) return;
    this.child = null;
    await stopGroup(child, 'SIGTERM', 10_000);
  }

  /** SIGKILL: a node that dies outright (its peers hold every acknowledged message of a replicated stream). */
  async kill(): Promise<void> {
    const child = this.child;
    this.child = null;
    await killNow(child);
  }
}

/**
 * A NATS cluster of `size` nodes (routes between all of them, JetStream on each, own ports and store
 * directories). `url` names every node, so a client moves to another when one goes.
 */
export class NatsCluster {
  private constructor(readonly nodes: Nats[]) {}

  static async create(dir: TempDir, size = 3): Promise<NatsCluster> {
    const ports = await Promise.all(Array.from({ length: size }, () => freePort()));
    const clusterPorts = await Promise.all(Array.from({ length: size }, () => freePort()));
    const nodes = ports.map((port, i) =>
      Nats.node(
        port,
        join(dir.path, `nats-${i}`),
        `n${i}`,
        clusterPorts[i]!,
        clusterPorts.filter((_, j) => j !== i),
      ),
    );
    const cluster = new NatsCluster(nodes);
    await Promise.all(nodes.map((n) => n.start()));
    if (!(await cluster.jetStreamReady(60_000))) throw new Error('the NATS cluster elected no JetStream leader within 60 s');
    return cluster;
  }

  /** True once JetStream answers through the cluster (its meta leader is elected), within `timeoutMs`. */
  async jetStreamReady(timeoutMs: number): Promise<boolean> {
    const nc = await connect({ servers: this.nodes.filter((n) => n.running).map((n) => n.url), maxReconnectAttempts: -1 });
    try {
      return await waitFor(
        async () => {
          try {
            await (await jetstreamManager(nc, { timeout: 1000 })).getAccountInfo();
            return true;
          } catch {
            return false;
          }
        },
        timeoutMs,
        250,
      );
    } finally {
      await nc.close();
    }
  }

  get url(): string {
    return this.nodes.map((n) => n.url).join(',');
  }

  /** Every node up. */
  get running(): boolean {
    return this.nodes.every((n) => n.running);
  }

  /** Starts the nodes that are down. */
  async start(): Promise<void> {
    await Promise.all(this.nodes.map((n) => n.start()));
  }

  /** The node named `name` (`n0`, `n1`, …: a stream's `cluster.leader`). */
  byName(name: string): Nats {
    const node = this.nodes[Number(name.replace(/^n/, ''))];
    if (!node) throw new Error(`no cluster node ${name}`);
    return node;
  }

  async stop(): Promise<void> {
    await Promise.all(this.nodes.map((n) => n.stop()));
  }
}

/** A private PostgreSQL 15 cluster (initdb in a temp directory); stopped, killed and restarted at will. */
export class Postgres {
  private child: ChildProcess | null = null;
  private readonly logLines: string[] = [];
  private constructor(
    readonly port: number,
    readonly dataDir: string,
    private readonly user: { uid: number; gid: number } | undefined,
    /** More `-c name=value` settings (a primary's replication settings). */
    private readonly extraArgs: string[] = [],
  ) {}

  static async create(dir: TempDir, opts: { name?: string; settings?: string[] } = {}): Promise<Postgres> {
    const user = pgUser();
    const dataDir = join(dir.path, opts.name ?? 'pg');
    mkdirSync(dataDir, { mode: 0o700 });
    if (user) chownSync(dataDir, user.uid, user.gid);
    const init = spawnSync(
      join(PG_BIN, 'initdb'),
      ['-D', dataDir, '-A', 'trust', '-U', 'postgres', '-E', 'UTF8', '--locale=C', '--no-sync', '--no-instructions'],
      {
        cwd: dir.path,
        encoding: 'utf8',
        ...(user ?? {}),
        timeout: 120_000,
      },
    );
    if (init.status !== 0) throw new Error(`initdb failed (${init.status}): ${init.stderr}`);
    const pgsql = new Postgres(await freePort(), dataDir, user, settingsArgs(opts.settings ?? []));
    await pgsql.start();
    return pgsql;
  }

  /**
   * A streaming standby of this server: `pg_basebackup -R` (the standby's connection to it written into the
   * copy) into `<dir>/<name>`, started on a port of its own; resolves once it streams from this server.
   */
  async standby(dir: TempDir, name: string): Promise<Postgres> {
    const dataDir = join(dir.path, name);
    mkdirSync(dataDir, { mode: 0o700 });
    if (this.user) chownSync(dataDir, this.user.uid, this.user.gid);
    const backup = spawnSync(
      join(PG_BIN, 'pg_basebackup'),
      ['-h', '127.0.0.1', '-p', String(this.port), '-U', 'postgres', '-D', dataDir, '-R', '-X', 'stream', '-c', 'fast', '--no-sync'],
      { cwd: dir.path, encoding: 'utf8', ...(this.user ?? {}), timeout: 120_000 },
    );
    if (backup.status !== 0) throw new Error(`pg_basebackup failed (${backup.status}): ${backup.stderr}`);
    const standby = new Postgres(await freePort(), dataDir, this.user, settingsArgs(['hot_standby=on']));
    await standby.start();
    const streaming = await waitFor(
      async () => (await this.scalar("SELECT count(*)::int AS n FROM pg_stat_replication WHERE state = 'streaming'")) === 1,
      30_000,
      100,
    );
    if (!streaming) throw new Error('the standby does not stream from the primary within 30 s');
    return standby;
  }

  /** `pg_ctl promote`: the standby leaves recovery and takes writes; resolves once it does. */
  async promote(): Promise<void> {
    const promote = spawnSync(join(PG_BIN, 'pg_ctl'), ['promote', '-D', this.dataDir, '-w', '-t', '60'], {
      cwd: this.dataDir,
      encoding: 'utf8',
      ...(this.user ?? {}),
      timeout: 70_000,
    });
    if (promote.status !== 0) throw new Error(`pg_ctl promote failed (${promote.status}): ${promote.stderr}`);
    const writable = await waitFor(
      async () => (await this.scalar('SELECT (NOT pg_is_in_recovery())::int AS n').catch(() => 0)) === 1,
      30_000,
    );
    if (!writable) throw new Error('the promoted standby still in recovery after 30 s');
  }

  private async scalar(sql: string): Promise<number> {
    const c = new pg.Client({ connectionString: this.url('postgres'), connectionTimeoutMillis: 2000 });
    c.on('error', () => {});
    try {
      await c.connect();
      const { rows } = await c.query<{ n: number }>(sql);
      return rows[0]?.n ?? 0;
    } finally {
      await c.end().catch(() => {});
    }
  }

  url(database: string): string {
    return `postgres://postgres@127.0.0.1:${this.port}/${database}`;
  }

  get running(): boolean {
    return this.child !== null;
  }

  async start(): Promise<void> {
    if (this.child) return;
    const args = [
      '-D',
      this.dataDir,
      '-p',
      String(this.port),
      '-c',
      'listen_addresses=127.0.0.1',
      '-c',
      `unix_socket_directories=${this.dataDir}`,
      '-c',
      'max_connections=200',
      // The campaign measures the gateway, not the disk: an OS crash is not one of its faults.
      '-c',
      'fsync=off',
      '-c',
      'full_page_writes=off',
      '-c',
      'shared_buffers=32MB',
      ...this.extraArgs,
    ];
    const child = spawnLogged(join(PG_BIN, 'postgres'), args, this.dataDir, this.user, this.logLines);
    this.child = child;
    child.once('exit', () => {
      if (this.child === child) this.child = null;
    });
    const ok = await waitFor(
      async () => {
        if (this.child !== child) throw new Error(`postgres exited:\n${this.logLines.join('')}`);
        return this.ping();
      },
      60_000,
      100,
    );
    if (!ok) throw new Error(`postgres not ready within 60 s:\n${this.logLines.join('')}`);
  }

  async ping(): Promise<boolean> {
    const c = new pg.Client({ connectionString: this.url('postgres'), connectionTimeoutMillis: 1000 });
    c.on('error', () => {});
    try {
      await c.connect();
      await c.query('SELECT 1');
      return true;
    } catch {
      return false;
    } finally {
      await c.end().catch(() => {});
    }
  }

  /**
   * `immediate`: SIGQUIT, every backend dies at once and the next start recovers from the WAL (a crash);
   * `fast`: SIGINT, open transactions are rolled back and the server shuts down cleanly.
   */
  async stop(mode: 'immediate' | 'fast'): Promise<void> {
    const child = this.child;
    if (!child || child.pid === undefined) return;
    this.child = null;
    // Signal the postmaster itself (it tells its backends); the group SIGKILL is only the fallback.
    try {
      process.kill(child.pid, mode === 'immediate' ? 'SIGQUIT' : 'SIGINT');
    } catch {
      // already gone
    }
    const timer = setTimeout(() => killGroup(child, 'SIGKILL'), 15_000);
    await exited(child);
    clearTimeout(timer);
    // A postmaster killed outright leaves its pid file behind, which would stop the next start.
    rmSync(join(this.dataDir, 'postmaster.pid'), { force: true });
  }
}

/** A server process in its own group (tracked), as `user` when given, its output kept in `lines` (the last 200). */
function spawnLogged(
  cmd: string,
  args: string[],
  cwd: string,
  user: { uid: number; gid: number } | undefined,
  lines: string[],
): ChildProcess {
  const child = spawn(cmd, args, { cwd, detached: true, stdio: ['ignore', 'pipe', 'pipe'], ...(user ?? {}) });
  track(child);
  const onData = (chunk: Buffer) => {
    lines.push(chunk.toString());
    if (lines.length > 200) lines.shift();
  };
  child.stdout!.on('data', onData);
  child.stderr!.on('data', onData);
  return child;
}

function settingsArgs(settings: string[]): string[] {
  return settings.flatMap((s) => ['-c', s]);
}

/**
 * The address the services know PostgreSQL by (a managed database's endpoint, a Kubernetes Service): a TCP
 * forwarder to the current primary. `retarget` moves it to a promoted standby and cuts every connection
 * to the old one, as a DNS or virtual-IP failover does.
 */
export class TcpEndpoint {
  private readonly sockets = new Set<Socket>();
  private constructor(
    private readonly server: Server,
    readonly port: number,
    private target: number,
  ) {}

  static async create(target: number): Promise<TcpEndpoint> {
    const port = await freePort();
    const server = createServer();
    const endpoint = new TcpEndpoint(server, port, target);
    server.on('connection', (client) => endpoint.forward(client));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', resolve);
    });
    return endpoint;
  }

  url(database: string): string {
    return `postgres://postgres@127.0.0.1:${this.port}/${database}`;
  }

  private forward(client: Socket): void {
    const upstream = connectTcp(this.target, '127.0.0.1');
    for (const s of [client, upstream]) {
      this.sockets.add(s);
      s.on('error', () => {});
      s.once('close', () => {
        this.sockets.delete(s);
        client.destroy();
        upstream.destroy();
      });
    }
    client.pipe(upstream);
    upstream.pipe(client);
  }

  async retarget(port: number): Promise<void> {
    this.target = port;
    for (const s of this.sockets) s.destroy();
  }

  async close(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

/**
 * A private PgBouncer in transaction mode in front of `target` (a PostgreSQL port): trust auth, every
 * database passed through, `poolSize` server connections per database, run as the `postgres` OS user when
 * we are root (it refuses root). `retarget` points it at another server (a promoted standby) without a
 * restart of the clients' connections: it reloads its config (SIGHUP) and closes the old server connections.
 */
export class PgBouncer {
  private child: ChildProcess | null = null;
  private readonly logLines: string[] = [];
  private constructor(
    readonly port: number,
    private readonly dir: string,
    private target: number,
    private readonly poolSize: number,
    private readonly user: { uid: number; gid: number } | undefined,
  ) {}

  static async create(dir: TempDir, target: number, opts: { poolSize?: number } = {}): Promise<PgBouncer> {
    const user = pgUser();
    const own = join(dir.path, 'pgbouncer');
    mkdirSync(own, { recursive: true });
    if (user) chownSync(own, user.uid, user.gid);
    const bouncer = new PgBouncer(await freePort(), own, target, opts.poolSize ?? 4, user);
    await bouncer.start();
    return bouncer;
  }

  url(database: string): string {
    return `postgres://postgres@127.0.0.1:${this.port}/${database}`;
  }

  private writeConfig(): string {
    const ini = join(this.dir, 'pgbouncer.ini');
    const users = join(this.dir, 'users.txt');
    writeFileSync(users, '"postgres" ""\n');
    writeFileSync(
      ini,
      [
        '[databases]',
        `* = host=127.0.0.1 port=${this.target}`,
        '[pgbouncer]',
        'listen_addr = 127.0.0.1',
        `listen_port = ${this.port}`,
        'unix_socket_dir =',
        'auth_type = trust',
        `auth_file = ${users}`,
        'pool_mode = transaction',
        // node-postgres sends a statement timeout at start-up (DB_STATEMENT_TIMEOUT_MS), which PgBouncer would
        // refuse: behind a pooler it is a setting of the role (docs/operations.md, "PgBouncer").
        'ignore_startup_parameters = statement_timeout',
        `default_pool_size = ${this.poolSize}`,
        'max_client_conn = 1000',
        // A dead server is retried quickly (failover), and a query waits this long for one.
        'server_login_retry = 1',
        'query_wait_timeout = 30',
        'server_check_delay = 1',
        `pidfile = ${join(this.dir, 'pgbouncer.pid')}`,
        '',
      ].join('\n'),
    );
    if (this.user) for (const f of [ini, users]) chownSync(f, this.user.uid, this.user.gid);
    return ini;
  }

  get running(): boolean {
    return this.child !== null;
  }

  async start(): Promise<void> {
    if (this.child) return;
    const ini = this.writeConfig();
    const child = spawnLogged(PGBOUNCER_BIN, [ini], this.dir, this.user, this.logLines);
    this.child = child;
    child.once('exit', () => {
      if (this.child === child) this.child = null;
    });
    const ok = await waitFor(
      () => {
        if (this.child !== child) throw new Error(`pgbouncer exited:\n${this.logLines.join('')}`);
        return this.logLines.join('').includes('process up');
      },
      30_000,
      50,
    );
    if (!ok) throw new Error(`pgbouncer not ready within 30 s:\n${this.logLines.join('')}`);
  }

  async close(): Promise<void> {
    await this.stop();
  }

  /** SIGKILL: every client and server connection of the pooler cut at once. */
  async kill(): Promise<void> {
    const child = this.child;
    this.child = null;
    await killNow(child);
    rmSync(join(this.dir, 'pgbouncer.pid'), { force: true });
  }

  /** Points the pooler at another PostgreSQL port; clients keep their connections to the pooler. */
  async retarget(port: number): Promise<void> {
    this.target = port;
    this.writeConfig();
    if (this.child?.pid !== undefined) process.kill(this.child.pid, 'SIGHUP');
    // Let the reload land before clients are expected to reach the new server.
    await sleep(200);
  }

  async stop(): Promise<void> {
    const child = this.child;
    if (!child) return;
    this.child = null;
    await stopGroup(child, 'SIGINT', 5_000);
  }
}
