// The real gateway processes (local provider, relays, control planes, billing), each `node --import tsx
// <main.ts>` in its own process group, over the campaign's private NATS and PostgreSQL.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { ensureDatabase, migrate } from '@s2s/db';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect as connectNats, type NatsConnection } from '@nats-io/transport-node';
import { busSubjects } from '@s2s/contract';
import pg from 'pg';
import {
  exited,
  killAll,
  killGroup,
  Nats,
  NatsCluster,
  PgBouncer,
  Postgres,
  stopGroup,
  TcpEndpoint,
  TempDir,
  track,
  waitFor,
} from './infra.js';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
export const ADMIN_TOKEN = 'chaos-admin-token-0123456789abcdef';
const KEPT_LINES = 400;

export type ServiceKind = 'local-provider' | 'relay' | 'control-plane' | 'billing';

const SCRIPT: Record<ServiceKind, { path: string; ready: string }> = {
  'local-provider': { path: 'services/local-provider/src/main.ts', ready: 'local provider listening' },
  relay: { path: 'services/relay/src/main.ts', ready: 'relay listening' },
  'control-plane': { path: 'services/control-plane/src/main.ts', ready: 'control plane listening' },
  billing: { path: 'services/billing/src/main.ts', ready: 'billing consumer started' },
};

/** An exit the campaign did not cause. */
export interface Crash {
  service: string;
  code: number | null;
  signal: string | null;
  tail: string[];
}

export class Service {
  child: ChildProcess | null = null;
  port = 0;
  /** The last lines the process wrote (JSON logs), newest last. */
  readonly output: string[] = [];
  /** Called with every line the process writes (see records()). */
  private readonly listeners = new Set<(line: string) => void>();
  private stopping = false;

  constructor(
    readonly name: string,
    readonly kind: ServiceKind,
    private env: Record<string, string>,
    private readonly crashes: Crash[],
  ) {}

  get running(): boolean {
    return this.child !== null;
  }

  /** Spawns the process and resolves once it logged its ready line (with the port it picked). */
  async start(extraEnv: Record<string, string> = {}): Promise<void> {
    if (this.child) throw new Error(`${this.name} is already running`);
    this.env = { ...this.env, ...extraEnv };
    this.stopping = false;
    const script = SCRIPT[this.kind];
    const child = spawn(process.execPath, ['--import', 'tsx', script.path], {
      cwd: ROOT,
      detached: true,
      env: { ...process.env, NODE_ENV: 'test', LOG_LEVEL: 'info', OTEL_SDK_DISABLED: 'true', ...this.env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    track(child);
    this.child = child;
    child.once('exit', (code, signal) => {
      if (this.child === child) this.child = null;
      if (!this.stopping) this.crashes.push({ service: this.name, code, signal, tail: this.output.slice(-20) });
    });
    await new Promise<void>((resolve, reject) => {
      let buf = '';
      const timer = setTimeout(
        () => reject(new Error(`${this.name} not ready within 60 s:\n${this.output.slice(-30).join('\n')}`)),
        60_000,
      );
      const onData = (chunk: Buffer) => {
        buf += chunk.toString();
        let nl: number;
        while ((nl = buf.indexOf('\n')) >= 0) {
          const line = buf.slice(0, nl);
          buf = buf.slice(nl + 1);
          this.output.push(line);
          if (this.output.length > KEPT_LINES) this.output.shift();
          for (const listener of this.listeners) listener(line);
          if (!line.includes(script.ready)) continue;
          try {
            const o = JSON.parse(line) as { msg?: string; port?: number };
            if (o.msg === script.ready) {
              if (typeof o.port === 'number') this.port = o.port;
              clearTimeout(timer);
              resolve();
            }
          } catch {
            // not a log line
          }
        }
      };
      child.stdout!.on('data', onData);
      child.stderr!.on('data', onData);
      child.once('exit', (code) => {
        clearTimeout(timer);
        reject(new Error(`${this.name} exited (${code}) before it was ready:\n${this.output.slice(-30).join('\n')}`));
      });
    });
  }

  /**
   * SIGKILL, as a crash would: no drain, no final checkpoint. `whileFrozen` runs between a SIGSTOP and the
   * SIGKILL: the process reads nothing more from then on, so what its sockets hold unread is lost to it.
   */
  async kill(whileFrozen?: () => void): Promise<void> {
    const child = this.child;
    if (!child) return;
    this.stopping = true;
    this.child = null;
    if (whileFrozen) {
      killGroup(child, 'SIGSTOP');
      whileFrozen();
    }
    killGroup(child, 'SIGKILL');
    await exited(child);
  }

  /** SIGTERM (the service drains), SIGKILL after `graceMs`. */
  async stop(graceMs = 15_000): Promise<void> {
    const child = this.child;
    if (!child) return;
    this.stopping = true;
    this.child = null;
    await stopGroup(child, 'SIGTERM', graceMs);
  }

  /** The JSON log lines whose `msg` is `msg`, from now (across restarts) until `stop()`. */
  records(msg: string): { lines: Record<string, unknown>[]; stop(): void } {
    const needle = `"msg":"${msg}"`;
    const lines: Record<string, unknown>[] = [];
    const listener = (line: string): void => {
      if (!line.includes(needle)) return;
      try {
        lines.push(JSON.parse(line) as Record<string, unknown>);
      } catch {
        // not a log line
      }
    };
    this.listeners.add(listener);
    return { lines, stop: () => this.listeners.delete(listener) };
  }

  /** Lines of the output whose JSON `msg` is `msg`. */
  logged(msg: string): number {
    const needle = `"msg":"${msg}"`;
    return this.output.filter((l) => l.includes(needle)).length;
  }
}

export interface StackOptions {
  /** Extra environment per service kind. */
  env?: Partial<Record<ServiceKind, Record<string, string>>>;
  /** Relays to run (attach targets); at least 1. */
  relays?: number;
  /**
   * A three-node NATS cluster (the stream with 3 replicas) and a PostgreSQL primary with a synchronous
   * streaming standby, which the services reach through an endpoint that a failover moves (`failover()`).
   */
  cluster?: boolean;
  /** PostgreSQL behind a private PgBouncer in transaction mode; the services then use unnamed statements. */
  pooler?: boolean;
}

/** The primary's settings on a cluster: a standby streams from it, and a commit waits for the standby. */
const PRIMARY_SETTINGS = ['wal_level=replica', 'max_wal_senders=5', 'full_page_writes=on'];

/** Private infrastructure plus the gateway processes over it; `close()` ends every process and removes the temp dir. */
export class Stack {
  readonly crashes: Crash[] = [];
  readonly relays: Service[] = [];
  private relayStarts = 0;
  provider!: Service;
  controlPlane!: Service;
  billing!: Service;
  /** Control planes started later with other settings (e.g. a short idle timeout), by name. */
  readonly extraControlPlanes = new Map<string, Service>();
  readonly prefix = `chaos_${randomBytes(3).toString('hex')}`;
  pool!: pg.Pool;
  private closed = false;

  /** The streaming standby of the primary (cluster), until a failover promotes it. */
  standby: Postgres | undefined;
  private standbys = 0;

  private constructor(
    readonly dir: TempDir,
    readonly nats: Nats | NatsCluster,
    /** The primary (after a failover, the promoted standby). */
    public pgsql: Postgres,
    /** What the services connect to: the primary itself, a failover endpoint or a PgBouncer. */
    readonly endpoint: TcpEndpoint | PgBouncer | undefined,
    readonly databaseUrl: string,
    private readonly opts: StackOptions,
  ) {}

  static async start(opts: StackOptions = {}): Promise<Stack> {
    const dir = new TempDir('stack');
    try {
      const [nats, pgsql] = await Promise.all([
        opts.cluster ? NatsCluster.create(dir, 3) : Nats.create(dir),
        Postgres.create(dir, opts.cluster ? { settings: PRIMARY_SETTINGS } : {}),
      ]);
      await ensureDatabase(pgsql.url('s2s_chaos'));
      await migrate(pgsql.url('s2s_chaos'));
      const endpoint = opts.pooler
        ? await PgBouncer.create(dir, pgsql.port, { poolSize: 20 })
        : opts.cluster
          ? await TcpEndpoint.create(pgsql.port)
          : undefined;
      const stack = new Stack(dir, nats, pgsql, endpoint, (endpoint ?? pgsql).url('s2s_chaos'), opts);
      if (opts.cluster) await stack.ensureStandby();
      await stack.startServices();
      return stack;
    } catch (err) {
      killAll();
      dir.remove();
      throw err;
    }
  }

  /** On a cluster, a synchronous streaming standby of the current primary (a new one after a failover). */
  async ensureStandby(): Promise<void> {
    if (!this.opts.cluster || this.standby?.running) return;
    this.standby = await this.pgsql.standby(this.dir, `pg-standby-${this.standbys++}`);
    // Synchronous: a commit the gateway was told of is on the standby too, so a failover loses none.
    const admin = new pg.Client({ connectionString: this.pgsql.url('postgres') });
    await admin.connect();
    try {
      await admin.query("ALTER SYSTEM SET synchronous_standby_names = '*'");
      await admin.query('SELECT pg_reload_conf()');
    } finally {
      await admin.end();
    }
  }

  /**
   * The primary crashes (immediate stop), the standby is promoted (`pg_ctl promote`) and the endpoint moves
   * to it; resolves with the milliseconds the store was away.
   */
  async failover(): Promise<number> {
    const standby = this.standby;
    if (!standby || !this.endpoint) throw new Error('failover needs a cluster stack (a standby and an endpoint)');
    const downAt = Date.now();
    await this.pgsql.stop('immediate');
    await standby.promote();
    await this.endpoint.retarget(standby.port);
    this.pgsql = standby;
    this.standby = undefined;
    return Date.now() - downAt;
  }

  private natsConn: NatsConnection | undefined;

  /** The events stream as the cluster reports it: its leader's node name and how many replicas are current. */
  async streamState(): Promise<{ leader: string | undefined; current: number }> {
    this.natsConn ??= await connectNats({ servers: this.nats.url.split(','), maxReconnectAttempts: -1, reconnectTimeWait: 250 });
    const jsm = await jetstreamManager(this.natsConn, { timeout: 2000 });
    const info = await jsm.streams.info(busSubjects(this.prefix).stream);
    const leader = info.cluster?.leader;
    const followers = (info.cluster?.replicas ?? []).filter((r) => r.current && !r.offline).length;
    return { leader, current: (leader ? 1 : 0) + followers };
  }

  /** On a cluster: waits until the stream has a leader and all `replicas` are current (false after `timeoutMs`). */
  async streamHealthy(replicas: number, timeoutMs: number): Promise<boolean> {
    return waitFor(async () => (await this.streamState().catch(() => ({ current: 0 }))).current >= replicas, timeoutMs, 250);
  }

  private common(): Record<string, string> {
    return {
      DATABASE_URL: this.databaseUrl,
      NATS_URL: this.nats.url,
      BUS_PREFIX: this.prefix,
      ...(this.opts.cluster ? { BUS_STREAM_REPLICAS: '3' } : {}),
      ...(this.opts.pooler ? { DATABASE_PREPARED_STATEMENTS: 'unnamed' } : {}),
    };
  }

  private async startServices(): Promise<void> {
    // The harness's own reads survive the database restarts of the campaign: errors are retried by callers.
    this.pool = new pg.Pool({ connectionString: this.databaseUrl, max: 4, connectionTimeoutMillis: 2000 });
    this.pool.on('error', () => {});
    const env = this.opts.env ?? {};
    this.provider = new Service('local-provider', 'local-provider', { LOCAL_PROVIDER_PORT: '0', ...env['local-provider'] }, this.crashes);
    await this.provider.start();
    const relays = Math.max(1, this.opts.relays ?? 2);
    await Promise.all(Array.from({ length: relays }, () => this.addRelay()));
    this.controlPlane = this.newControlPlane('control-plane', {});
    this.billing = new Service(
      'billing',
      'billing',
      // Shorter scales where the config allows (redelivery after a crash, sweeper period).
      { ...this.common(), ACK_WAIT_MS: '5000', SWEEP_INTERVAL_MS: '1000', ...env.billing },
      this.crashes,
    );
    await Promise.all([this.controlPlane.start(), this.billing.start()]);
  }

  private newControlPlane(name: string, extra: Record<string, string>): Service {
    return new Service(
      name,
      'control-plane',
      {
        ...this.common(),
        HTTP_PORT: '0',
        ADMIN_TOKEN,
        REALTIME_PUBLIC_URL: this.relayUrl(0),
        ...this.opts.env?.['control-plane'],
        ...extra,
      },
      this.crashes,
    );
  }

  /** A further control plane with its own settings (sessions it creates snapshot them). */
  async controlPlaneWith(name: string, extra: Record<string, string>): Promise<Service> {
    let cp = this.extraControlPlanes.get(name);
    if (!cp) {
      cp = this.newControlPlane(name, extra);
      this.extraControlPlanes.set(name, cp);
    }
    if (!cp.running) await cp.start();
    return cp;
  }

  async addRelay(): Promise<Service> {
    const index = this.relays.length;
    const relay = new Service(`relay-${index}`, 'relay', this.relayEnv(), this.crashes);
    this.relays.push(relay);
    await relay.start();
    return relay;
  }

  /** Starts a relay again after a kill, under a new relay id as a replacement process would have. */
  async restartRelay(index: number): Promise<void> {
    const relay = this.relays[index];
    if (!relay) throw new Error(`no relay ${index}`);
    if (relay.running) await relay.kill();
    await relay.start({ RELAY_ID: this.nextRelayId(), RELAY_PORT: String(relay.port) });
  }

  private nextRelayId(): string {
    return `chaos-relay-${this.relayStarts++}-${randomBytes(2).toString('hex')}`;
  }

  private relayEnv(): Record<string, string> {
    return {
      ...this.common(),
      RELAY_PORT: '0',
      RELAY_ID: this.nextRelayId(),
      LOCAL_PROVIDER_URL: `ws://127.0.0.1:${this.provider.port}/v1/realtime`,
      ...this.opts.env?.relay,
    };
  }

  relayUrl(index: number): string {
    const relay = this.relays[index];
    if (!relay) throw new Error(`no relay ${index}`);
    return `ws://127.0.0.1:${relay.port}/v1/realtime`;
  }

  baseUrl(cp: Service = this.controlPlane): string {
    return `http://127.0.0.1:${cp.port}`;
  }

  /** Every gateway process, then the infrastructure; removes the temp dir. Safe to call twice. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    const services = [this.billing, this.controlPlane, ...this.extraControlPlanes.values(), ...this.relays, this.provider];
    await Promise.all(services.map((s) => s?.stop(5000)));
    await this.pool?.end().catch(() => {});
    await this.natsConn?.close().catch(() => {});
    await this.nats.stop();
    await this.endpoint?.close();
    await Promise.all([this.pgsql.stop('fast'), this.standby?.stop('fast')]);
    killAll();
    this.dir.remove();
  }
}
