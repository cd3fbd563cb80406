import type { Bus } from '@s2s/bus';
import type { UsageCheckpoint } from '@s2s/contract';
import type { Usage } from '@s2s/core';
import { publishUsageCheckpoint } from '@s2s/sessions';
import type { Logger } from '@s2s/telemetry';

/** What the checkpointer needs of one attachment. */
export interface Metered {
  readonly sessionId: string;
  readonly attachmentId: string;
  /** Cumulative usage of this attachment's upstream. */
  usage(): Usage;
  /** Last seq published (0 before the first). */
  seq: number;
  /** Usage changed since the last checkpoint; set by markDirty, cleared by the timer. */
  dirty: boolean;
  /** Set once the final checkpoint is under way: no periodic one may follow it. */
  sealed: boolean;
}

/**
 * The interval is cut into this many ticks and each attachment is visited on one of them, so a thousand
 * sessions cost fifty small bursts of publishes a second instead of one event-loop stall.
 */
const SLICES = 20;

const FINAL_RETRY_DELAYS_MS = [0, 100, 250, 500, 1000, 2000];

/**
 * Publishes cumulative usage checkpoints to JetStream: one timer for the whole process visits only the
 * attachments whose usage changed, each once per interval, so nothing runs per frame or per idle session.
 */
export class Checkpointer {
  /** Dirty attachments by the slice of the interval they are published in. */
  private readonly slices: Set<Metered>[] = Array.from({ length: SLICES }, () => new Set());
  private readonly sliceOf = new WeakMap<Metered, number>();
  private nextSlice = 0;
  private tick = 0;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly deps: { bus: Bus; relayId: string; logger: Logger; intervalMs: number },
  ) {}

  start(): void {
    this.timer ??= setInterval(() => this.flush(), this.deps.intervalMs / SLICES);
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }

  markDirty(m: Metered): void {
    if (m.dirty || m.sealed) return;
    m.dirty = true;
    let slice = this.sliceOf.get(m);
    if (slice === undefined) {
      slice = this.nextSlice++ % SLICES;
      this.sliceOf.set(m, slice);
    }
    (this.slices[slice] as Set<Metered>).add(m);
  }

  /** One tick: a checkpoint for every attachment of the current slice whose usage changed since its last. */
  flush(): void {
    const set = this.slices[this.tick++ % SLICES] as Set<Metered>;
    if (set.size === 0) return;
    const batch = [...set];
    set.clear();
    for (const m of batch) {
      m.dirty = false;
      if (m.sealed) continue;
      this.publish(m, false).catch((err: unknown) => {
        // The next tick publishes the then-current cumulative figures under a new seq.
        this.deps.logger.warn({ err, session_id: m.sessionId, attachment_id: m.attachmentId }, 'checkpoint publish failed');
        this.markDirty(m);
      });
    }
  }

  /**
   * The last checkpoint of an attachment (`final: true`), retried for a few seconds: billing settles without
   * waiting for its grace period once every attachment of an ended session has sent one.
   */
  async publishFinal(m: Metered): Promise<boolean> {
    m.sealed = true;
    m.dirty = false;
    const slice = this.sliceOf.get(m);
    if (slice !== undefined) this.slices[slice]?.delete(m);
    for (const delay of FINAL_RETRY_DELAYS_MS) {
      if (delay > 0) await sleep(delay);
      try {
        await this.publish(m, true);
        return true;
      } catch (err) {
        this.deps.logger.warn({ err, session_id: m.sessionId, attachment_id: m.attachmentId }, 'final checkpoint publish failed');
      }
    }
    this.deps.logger.error({ session_id: m.sessionId, attachment_id: m.attachmentId }, 'final checkpoint lost');
    return false;
  }

  private async publish(m: Metered, final: boolean): Promise<void> {
    const u = m.usage();
    const seq = ++m.seq;
    const message: UsageCheckpoint = {
      type: 'usage.checkpoint',
      version: 1,
      session_id: m.sessionId,
      attachment_id: m.attachmentId,
      relay_id: this.deps.relayId,
      seq,
      audio_in_ms: u.audio_in_ms,
      audio_out_ms: u.audio_out_ms,
      input_audio_tokens: u.input_audio_tokens,
      output_audio_tokens: u.output_audio_tokens,
      final,
      emitted_at: Date.now(),
    };
    await publishUsageCheckpoint({ ctx: this.deps, input: message });
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
