import { subscribeMessages, type Bus, type Subscription } from '@s2s/bus';
import { CloseCode, RelayAttached } from '@s2s/contract';
import { isNewerAttachment, ZERO_USAGE } from '@s2s/core';
import { readHeldSessions, requestEnd } from '@s2s/sessions';
import type { DbHandle } from '@s2s/db';
import type { Context, Logger, Metrics } from '@s2s/telemetry';
import type { WebSocket } from 'ws';
import { Attachment, type AttachmentContext, type AttachmentInit } from './attachment/attachment.js';
import { Checkpointer } from './metering/checkpoints.js';
import { createCodecs } from './codecs/index.js';
import { gaSessionUpdate } from './codecs/openai/codec.js';
import type { Config } from './config.js';
import { RelayLease } from './lease.js';
import { ControlSocket } from './control/socket.js';
import type { FinishReason } from './realtime-errors.js';
import { RelayTelemetry } from './telemetry.js';
import type { UpstreamOpener } from './upstream/opener.js';

export interface RelayDeps {
  config: Config;
  db: DbHandle;
  bus: Bus;
  logger: Logger;
  providers: UpstreamOpener;
  /** The process's metrics (startTelemetry().metrics): instruments and the `/metrics` handler. */
  metrics: Metrics;
}

const decoder = new TextDecoder();
const encoder = new TextEncoder();

/**
 * The attachments of this relay process and what coordinates them with other relays: the bus tells it
 * about newer attachments (4001) and end requests (1000) at once; a periodic read of the sessions it holds
 * catches what the bus may have missed. Only the live sockets live here; everything else is in the database.
 */
export class Relay {
  private readonly all = new Set<Attachment>();
  private readonly bySession = new Map<string, Set<Attachment>>();
  private readonly controls = new Map<string, Set<ControlSocket>>();
  private readonly checkpoints: Checkpointer;
  private readonly lease: RelayLease;
  /** What every attachment shares; each adds its dialect's codec. */
  private readonly ctx: Omit<AttachmentContext<Attachment>, 'codec'>;
  /** Each attachment's codec, by its dialect (codecs/index.ts). */
  private readonly codecFor = createCodecs();
  private readonly subscriptions: Subscription[] = [];
  private reconcileTimer: NodeJS.Timeout | undefined;
  private reconciling = false;
  private drainPromise: Promise<void> | null = null;
  readonly telemetry: RelayTelemetry;

  constructor(private readonly deps: RelayDeps) {
    this.telemetry = new RelayTelemetry(deps.metrics.meter, deps.config.RELAY_ID);
    this.checkpoints = new Checkpointer({
      telemetry: this.telemetry,
      bus: deps.bus,
      relayId: deps.config.RELAY_ID,
      logger: deps.logger,
      intervalMs: deps.config.CHECKPOINT_INTERVAL_MS,
    });
    this.lease = new RelayLease({
      db: deps.db,
      relayId: deps.config.RELAY_ID,
      renewMs: deps.config.RELAY_LEASE_RENEW_MS,
      ttlMs: deps.config.RELAY_LEASE_TTL_MS,
      logger: deps.logger,
    });
    this.ctx = {
      config: deps.config,
      db: deps.db,
      bus: deps.bus,
      logger: deps.logger,
      providers: deps.providers,
      checkpoints: this.checkpoints,
      telemetry: this.telemetry,
      onFinished: (a) => this.remove(a),
    };
  }

  get draining(): boolean {
    return this.drainPromise !== null;
  }

  get size(): number {
    return this.all.size;
  }

  start(): void {
    const { bus, logger } = this.deps;
    this.subscriptions.push(
      subscribeMessages(bus.nc, bus.subjects.endRequestedAll, (message) => {
        if (message.type !== 'session.end_requested') return;
        for (const a of this.attachmentsOf(message.session_id)) void a.finish('end_requested');
        for (const c of this.controls.get(message.session_id) ?? []) c.close(CloseCode.sessionEnded, 'session ended');
      }),
      bus.nc.subscribe(bus.subjects.relayAttachedAll, {
        callback: (err, msg) => {
          if (err) return;
          let parsed;
          try {
            parsed = RelayAttached.safeParse(JSON.parse(decoder.decode(msg.data)));
          } catch {
            return;
          }
          if (parsed.success)
            this.supersede(parsed.data.session_id, { id: parsed.data.attachment_id, startedAtMs: parsed.data.started_at });
          else logger.warn('malformed relay.attached message');
        },
      }),
    );
    this.checkpoints.start();
    this.lease.start();
    this.reconcileTimer = setInterval(() => void this.reconcile(), this.deps.config.RECONCILE_INTERVAL_MS);
  }

  /** Takes over a freshly upgraded socket: registers it, replaces older attachments here and elsewhere. */
  attach(init: AttachmentInit & { ws: WebSocket }): Attachment {
    const { session } = init;
    // The dialect negotiated before the upgrade picks the codec; nothing past it knows one.
    const codec = this.codecFor(init.dialect, { ...session, ...(init.streamId === undefined ? {} : { streamId: init.streamId }) });
    let initial = session.initialSettings ? gaSessionUpdate(session.initialSettings, undefined) : undefined;
    // A phone stream is μ-law both ways whatever the secret's session said (carried as is to a provider taking μ-law).
    if (init.streamId !== undefined && initial?.type !== 'refusal') {
      const update = { ...initial?.update, formats: { input: 'pcmu', output: 'pcmu' } as const };
      initial = { type: 'session.update', eventId: undefined, update };
    }
    const a = new Attachment({ ...this.ctx, codec }, { ...init, initial });
    this.supersede(a.sessionId, { id: a.attachmentId, startedAtMs: a.startedAtMs });
    this.all.add(a);
    let set = this.bySession.get(a.sessionId);
    if (!set) this.bySession.set(a.sessionId, (set = new Set()));
    set.add(a);
    this.announce(a);
    a.start();
    return a;
  }

  /**
   * An attachment row whose socket died before the upgrade completed: it still gets its final checkpoint
   * (zero usage) so billing need not wait for it, and a legacy session, which nobody else can end, is ended.
   */
  async abandon(input: { sessionId: string; attachmentId: string; legacy: boolean }, cause?: Context): Promise<void> {
    const orphan = this.checkpoints.track({
      sessionId: input.sessionId,
      attachmentId: input.attachmentId,
      usage: () => ZERO_USAGE,
      routes: () => [],
    });
    await this.checkpoints.publishFinal(orphan);
    if (input.legacy) await this.endLegacy(input.sessionId, cause);
  }

  /** Ends a legacy session whose socket never became an attachment; `cause`: the upgrade's context. */
  async endLegacy(sessionId: string, cause?: Context): Promise<void> {
    await requestEnd({ ctx: this.deps, input: { sessionId, cause: 'client_closed', ...(cause ? { trace: cause } : {}) } }).catch(
      (err: unknown) => this.deps.logger.warn({ err, session_id: sessionId }, 'end request failed'),
    );
  }

  /**
   * SIGTERM: every socket gets 1012 and its final checkpoint; resolves when every final checkpoint is
   * published (however long the bus takes, the lease renewed meanwhile), after which the lease is deleted.
   */
  drain(): Promise<void> {
    this.drainPromise ??= (async () => {
      await this.finishAll('draining');
      await this.checkpoints.whenIdle();
      this.stop();
      await this.lease.release();
    })();
    return this.drainPromise;
  }

  /** Final checkpoints not yet accepted by the bus (a drain deadline must not exit while there are). */
  get pendingFinals(): number {
    return this.checkpoints.pendingFinals;
  }

  /** Takes over an upgraded control socket (`?call_id=`): a pipe to the session's media attachment, wherever it is. */
  openControl(input: { ws: WebSocket; sessionId: string; log: Logger }): ControlSocket {
    const c = new ControlSocket({
      ...input,
      bus: this.deps.bus,
      onClosed: (closed) => {
        const set = this.controls.get(closed.sessionId);
        set?.delete(closed);
        if (set?.size === 0) this.controls.delete(closed.sessionId);
      },
    });
    let set = this.controls.get(input.sessionId);
    if (!set) this.controls.set(input.sessionId, (set = new Set()));
    set.add(c);
    c.start();
    return c;
  }

  private async finishAll(reason: FinishReason): Promise<void> {
    for (const set of [...this.controls.values()])
      for (const c of [...set]) c.close(CloseCode.relayDraining, 'relay draining, attach again');
    await Promise.all([...this.all].map((a) => a.finish(reason)));
  }

  private stop(): void {
    for (const s of this.subscriptions) s.unsubscribe();
    this.subscriptions.length = 0;
    if (this.reconcileTimer) clearInterval(this.reconcileTimer);
    this.reconcileTimer = undefined;
    this.checkpoints.stop();
  }

  private attachmentsOf(sessionId: string): Attachment[] {
    const set = this.bySession.get(sessionId);
    return set ? [...set] : [];
  }

  /** Closes (4001) every attachment of the session older than `newest`. */
  private supersede(sessionId: string, newest: { id: string; startedAtMs: number }): void {
    for (const a of this.attachmentsOf(sessionId)) {
      if (a.attachmentId !== newest.id && isNewerAttachment(newest, { id: a.attachmentId, startedAtMs: a.startedAtMs })) {
        void a.finish('replaced');
      }
    }
  }

  private announce(a: Attachment): void {
    const { bus, config, logger } = this.deps;
    const message: RelayAttached = {
      type: 'relay.attached',
      version: 1,
      session_id: a.sessionId,
      attachment_id: a.attachmentId,
      relay_id: config.RELAY_ID,
      started_at: a.startedAtMs,
    };
    try {
      bus.nc.publish(bus.subjects.relayAttached(a.sessionId), encoder.encode(JSON.stringify(message)), { headers: a.trace.headers });
    } catch (err) {
      // The periodic reconcile of the other relay finds the newer attachment in the database.
      logger.warn({ err, session_id: a.sessionId }, 'attachment announcement failed');
    }
  }

  private remove(a: Attachment): void {
    this.all.delete(a);
    const set = this.bySession.get(a.sessionId);
    if (set) {
      set.delete(a);
      if (set.size === 0) this.bySession.delete(a.sessionId);
    }
  }

  /** One query for all held sessions: replaced, ended or key revoked while the bus was not listening. */
  private async reconcile(): Promise<void> {
    if (this.reconciling || this.bySession.size === 0) return;
    this.reconciling = true;
    try {
      const states = await readHeldSessions({ ctx: this.deps, input: { sessionIds: [...this.bySession.keys()] } });
      for (const s of states) {
        for (const a of this.attachmentsOf(s.sessionId)) {
          if (a.isFinishing) continue;
          if (s.keyRevoked) void a.finish('auth_lost');
          else if (s.ending) void a.finish('end_requested');
          else if (s.newestAttachmentId !== null && s.newestAttachmentId !== a.attachmentId) void a.finish('replaced');
        }
      }
    } catch (err) {
      this.deps.logger.warn({ err }, 'reconcile failed');
    } finally {
      this.reconciling = false;
    }
  }
}
