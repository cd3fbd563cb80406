import { traceHeaders, type Bus, type MsgHdrs } from '@s2s/bus';
import { UsageCheckpointEncoder, type CheckpointRoute, type UsageCheckpoint } from '@s2s/contract';
import { backoffMs, retry, sameUsage, usageCheckpointMsgId, ZERO_USAGE, type Usage } from '@s2s/core';
import { context, trace, type Context, type Logger } from '@s2s/telemetry';

/** What the checkpointer reads of one attachment. */
export interface MeteredSource {
  readonly sessionId: string;
  readonly attachmentId: string;
  /** Cumulative usage of this attachment's upstream. */
  usage(): Usage;
  /** The same split by the route that served it, the parts summing to usage() read at the same moment. */
  routes(): CheckpointRoute[];
  /** The attachment's trace: checkpoints are published in its context and carry its headers. */
  readonly trace?: { readonly context: Context; readonly headers: MsgHdrs };
}

/** What a producer span of a checkpoint records. */
export type CheckpointFacts = Pick<UsageCheckpoint, 'seq' | 'final'> & Usage;

/** What the checkpointer reports: each acknowledged publish, in a producer span. */
export interface CheckpointTelemetry {
  published<T>(source: MeteredSource, checkpoint: CheckpointFacts, publish: (ctx: Context) => Promise<T>): Promise<T>;
}

/** The checkpointer's own record of one attachment; the attachment only hands it back. */
export interface CheckpointTicket {
  /** Last seq published or being published (0 before the first). */
  readonly seq: number;
}

class Tracked implements CheckpointTicket {
  seq = 0;
  /** Usage may have changed since the last checkpoint; cleared by the tick that visits it. */
  dirty = false;
  /** The final checkpoint is under way: no periodic one may follow it. */
  sealed = false;
  inflight = false;
  /** After a failed publish, no retry before this (Date.now() ms). */
  retryAt = 0;
  failures = 0;
  /** The counters of the last checkpoint sent; a tick with the same counters sends nothing once they are acknowledged. */
  sent: Usage | null = null;
  /** `sent` was acknowledged by JetStream (not only written to the connection). */
  acked = false;
  ackedAt = 0;
  /** Audio in and out at the previous markDirty: the last frame's size predicts the next one's. */
  seenIn = 0;
  seenOut = 0;
  /** Due early: its visit may not wait for an acknowledged publish still in flight. */
  urgent = false;
  /** The checkpoints' JSON (@s2s/contract's one encoder: the ids encoded once, a single route's JSON reused). */
  private readonly encoder: UsageCheckpointEncoder;
  readonly subject: string;

  constructor(
    readonly source: MeteredSource,
    /** The slice whose tick visits it; an early publish moves it (Checkpointer.flushEarly). */
    public slice: number,
    relayId: string,
    bus: Bus,
  ) {
    this.encoder = new UsageCheckpointEncoder({ session_id: source.sessionId, attachment_id: source.attachmentId, relay_id: relayId });
    this.subject = bus.subjects.usageCheckpoint(source.sessionId);
  }

  /** The checkpoint's JSON: what JSON.stringify of the version 4 message gives (test/checkpoints.test.ts). */
  payload(seq: number, u: Usage, final: boolean, emittedAt: number): string {
    return this.encoder.encode(seq, u, this.source.routes(), final, emittedAt);
  }
}

/**
 * The interval is cut into this many ticks and each attachment is visited on one of them, so a thousand
 * sessions cost many small bursts of publishes a second instead of one event-loop stall.
 */
const SLICES = 10;
const RETRY_BASE_MS = 100;
const RETRY_CAP_MS = 5000;
/**
 * A JetStream publish waits for the stream's acknowledgement (about 40 µs of CPU); a plain NATS publish to
 * the same subject is stored all the same at a third of the cost but unconfirmed. So an attachment's
 * checkpoints within this long of its last acknowledged one go plain, and its counters are confirmed with
 * an acknowledged one at least this often: four checkpoints a second cost about what one did.
 */
const ACK_EVERY_MS = 1000;

/**
 * Publishes cumulative usage checkpoints to JetStream: one timer for the whole process visits only the
 * attachments whose usage changed, each at most once per interval, so nothing runs per frame or per idle
 * session. Nothing measured is given up while the process lives: a failed checkpoint is retried with
 * backoff, and a final one until the bus takes it (drain waits for it, see whenIdle).
 */
export class Checkpointer {
  private readonly slices: Set<Tracked>[] = Array.from({ length: SLICES }, () => new Set());
  private nextSlice = 0;
  private tick = 0;
  private timer: NodeJS.Timeout | undefined;
  private finals = 0;
  private idleWaiters: (() => void)[] = [];
  /** Attachments whose unpublished audio reached `earlyAudioMs`: published together at the end of this event-loop turn. */
  private readonly early = new Set<Tracked>();
  private earlyScheduled = false;

  constructor(
    private readonly deps: {
      bus: Bus;
      relayId: string;
      logger: Logger;
      intervalMs: number;
      /**
       * Unpublished audio (input or output ms) that is published at once instead of on the slice's tick, so
       * a relay killed right after a fast answer loses less than this each way (default: the interval).
       */
      earlyAudioMs?: number;
      now?: () => number;
      telemetry?: CheckpointTelemetry;
    },
  ) {}

  /** Final checkpoints not yet accepted by the bus. */
  get pendingFinals(): number {
    return this.finals;
  }

  start(): void {
    this.timer ??= setInterval(() => this.flush(), this.deps.intervalMs / SLICES);
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }

  track(source: MeteredSource): CheckpointTicket {
    return new Tracked(source, this.nextSlice++ % SLICES, this.deps.relayId, this.deps.bus);
  }

  /**
   * The attachment's usage changed: the tick of its slice publishes it, or this call at once when the audio
   * not yet published reaches `earlyAudioMs` either way (issue 8: a relay killed right after a fast answer
   * lost up to an interval of output). Cheap; called per frame. `current`: the source's usage() of this
   * very moment, when the caller has it already (one object less per frame).
   */
  markDirty(ticket: CheckpointTicket, current?: Usage): void {
    const t = ticket as Tracked;
    if (t.sealed) return;
    const set = this.slices[t.slice] as Set<Tracked>;
    if (!t.dirty) {
      t.dirty = true;
      set.add(t);
    }
    if (t.failures > 0) return;
    const u = current ?? t.source.usage();
    const lastIn = u.audio_in_ms - t.seenIn;
    const lastOut = u.audio_out_ms - t.seenOut;
    t.seenIn = u.audio_in_ms;
    t.seenOut = u.audio_out_ms;
    // Published before the next frame like the last one would take the unpublished audio past the bound: a
    // relay killed at any moment then leaves at most `early` ms unpublished each way (100 ms frames against
    // 250 ms: published at 200, not at 300). An acknowledged publish in flight does not hold it back.
    const early = this.deps.earlyAudioMs ?? this.deps.intervalMs;
    const sent = t.sent ?? ZERO_USAGE;
    if (u.audio_in_ms - sent.audio_in_ms + lastIn > early || u.audio_out_ms - sent.audio_out_ms + lastOut > early) {
      t.urgent = true;
      this.visitSoon(t);
    }
  }

  /**
   * At once, but not one by one: every attachment due in this event-loop turn (the frames of many sockets are
   * read in one turn) is published in the check phase right after it, so their publishes leave in one write
   * to the bus instead of one write each. Nothing waits for a timer: the loss bound is unchanged.
   */
  private visitSoon(t: Tracked): void {
    this.early.add(t);
    if (this.earlyScheduled) return;
    this.earlyScheduled = true;
    setImmediate(this.flushEarly);
  }

  private readonly flushEarly = (): void => {
    this.earlyScheduled = false;
    const now = this.now();
    // The slice that ticked last ticks next an interval from now. An attachment published here is visited
    // then, not on its own slice's tick up to an interval sooner: while audio streams that tick came a frame
    // or two after the early publish and published again (7.7 checkpoints a second an attachment instead of
    // about 4). Every change is still published within an interval and a tick, audio by the early rule above.
    const next = (this.tick + SLICES - 1) % SLICES;
    for (const t of this.early) {
      const seq = t.seq;
      this.visit(this.slices[t.slice] as Set<Tracked>, t, now);
      if (t.seq !== seq) this.moveTo(t, next);
    }
    this.early.clear();
  };

  private moveTo(t: Tracked, slice: number): void {
    if (t.slice === slice) return;
    if ((this.slices[t.slice] as Set<Tracked>).delete(t)) (this.slices[slice] as Set<Tracked>).add(t);
    t.slice = slice;
  }

  /** One tick: a checkpoint for every attachment of the current slice whose counters changed. */
  flush(): void {
    const set = this.slices[this.tick++ % SLICES] as Set<Tracked>;
    if (set.size === 0) return;
    const now = this.now();
    for (const t of set) this.visit(set, t, now);
  }

  /** Publishes `t`'s counters if they changed (plain within ACK_EVERY_MS of an acknowledged one). */
  private visit(set: Set<Tracked>, t: Tracked, now: number): void {
    const urgent = t.urgent;
    t.urgent = false;
    // One acknowledged checkpoint in flight per attachment (an urgent one goes plain beside it); a failed
    // one waits for its backoff. Both stay dirty.
    if ((t.inflight && !urgent) || now < t.retryAt) return;
    if (t.sealed) {
      set.delete(t);
      return;
    }
    const u = t.source.usage();
    const ackDue = !t.inflight && (t.failures > 0 || now - t.ackedAt >= ACK_EVERY_MS);
    if (t.sent !== null && sameUsage(t.sent, u)) {
      // Unchanged: done once acknowledged; an unconfirmed plain one is confirmed when an ack is due.
      if (t.acked || !ackDue) {
        if (t.acked) this.clean(set, t);
        return;
      }
    }
    this.clean(set, t);
    if (!ackDue) {
      try {
        this.publishPlain(t, u);
      } catch (err) {
        this.failed(t, err);
      }
      return;
    }
    this.publishAcked(t, u);
  }

  /** A checkpoint JetStream acknowledges; a failure leaves it dirty for the tick after its backoff. */
  private publishAcked(t: Tracked, u: Usage): void {
    t.inflight = true;
    this.publish(t, u, false).then(
      () => {
        t.inflight = false;
        t.failures = 0;
      },
      (err: unknown) => {
        t.inflight = false;
        this.failed(t, err);
      },
    );
  }

  private clean(set: Set<Tracked>, t: Tracked): void {
    set.delete(t);
    t.dirty = false;
  }

  /** The next tick of its slice after the backoff sends the then-current counters. */
  private failed(t: Tracked, err: unknown): void {
    t.failures++;
    t.retryAt = this.now() + backoffMs(t.failures, RETRY_BASE_MS, RETRY_CAP_MS);
    this.logFailure(t, err, 'checkpoint publish failed');
    this.markDirty(t);
  }

  /**
   * The last checkpoint of an attachment (`final: true`), retried with backoff until the bus accepts it:
   * billing waits for it while this relay's lease is alive (docs/billing.md), so it is never given up.
   */
  async publishFinal(ticket: CheckpointTicket): Promise<void> {
    const t = ticket as Tracked;
    t.sealed = true;
    t.dirty = false;
    this.slices[t.slice]?.delete(t);
    this.finals++;
    const publish = async (attempt: number) => {
      await this.publish(t, t.source.usage(), true);
      if (attempt > 1)
        this.deps.logger.info(
          { session_id: t.source.sessionId, attachment_id: t.source.attachmentId, attempts: attempt },
          'final checkpoint published after retries',
        );
    };
    const onRetry = (err: unknown) => {
      t.failures++;
      this.logFailure(t, err, 'final checkpoint publish failed');
    };
    try {
      await retry(publish, { baseMs: RETRY_BASE_MS, capMs: RETRY_CAP_MS, onRetry });
    } finally {
      if (--this.finals === 0) {
        const waiters = this.idleWaiters;
        this.idleWaiters = [];
        for (const w of waiters) w();
      }
    }
  }

  /** Resolves once no final checkpoint is pending. */
  whenIdle(): Promise<void> {
    if (this.finals === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  private now(): number {
    return this.deps.now ? this.deps.now() : Date.now();
  }

  /** The first failures of a run are warnings; a long outage logs every tenth. */
  private logFailure(t: Tracked, err: unknown, msg: string): void {
    if (t.failures <= 3 || t.failures % 10 === 0) {
      this.deps.logger.warn({ err, session_id: t.source.sessionId, attachment_id: t.source.attachmentId, failures: t.failures }, msg);
    }
  }

  /**
   * Acknowledged by JetStream (Msg-Id deduplicated, trace headers: the attachment's, made once, or the producer
   * span's when one records); rejects when the stream did not store it.
   */
  private async publish(t: Tracked, u: Usage, final: boolean): Promise<void> {
    const seq = ++t.seq;
    const payload = t.payload(seq, u, final, Date.now());
    const msgId = usageCheckpointMsgId({ attachment_id: t.source.attachmentId, seq });
    const send = (ctx: Context) => {
      // Under a recording producer span the headers name it; else the attachment's span, whose headers exist.
      const headers = trace.getSpan(ctx)?.isRecording() ? traceHeaders(ctx) : (t.source.trace?.headers ?? traceHeaders(ctx));
      return this.deps.bus.publishAcked(t.subject, payload, msgId, headers);
    };
    await (this.deps.telemetry ? this.deps.telemetry.published(t.source, { ...u, seq, final }, send) : send(context.active()));
    // A plain one sent beside it carries newer counters: those stay unconfirmed.
    if (seq === t.seq) {
      t.sent = u;
      t.acked = true;
    }
    t.ackedAt = this.now();
  }

  /** Written to the connection only; the stream stores it, and the next acknowledged one confirms the counters. */
  private publishPlain(t: Tracked, u: Usage): void {
    const payload = t.payload(++t.seq, u, false, Date.now());
    // The attachment's trace headers, made once per attachment: nothing traced per plain publish.
    const headers = t.source.trace?.headers;
    this.deps.bus.nc.publish(t.subject, payload, headers ? { headers } : undefined);
    t.sent = u;
    t.acked = false;
  }
}
