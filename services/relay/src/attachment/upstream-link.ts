import { ZERO_USAGE } from '@s2s/core';
import type { Logger } from '@s2s/telemetry';
import type { InternalClientEvent } from '../codecs/events.js';
import type { MeteredUpstream, UsageReading } from '../providers/shared/types.js';

/** Events held while the upstream opens; beyond this they are refused (the open is bounded anyway). */
const MAX_PENDING = 1000;

/** The meter before the upstream opened: nothing was used. */
const NOTHING_METERED: UsageReading = Object.freeze({ usage: () => ZERO_USAGE, usageNow: () => ZERO_USAGE, routes: () => [] });

/** No client event yet: the upstream opens at the first one, with the settings of a first session.update. */
const IDLE = 0;
const OPENING = 1;
const OPEN = 2;
const FINISHING = 3;

export interface UpstreamLinkDeps {
  /** Opens the upstream with the client's settings so far; the signal aborts an open the finish overtook. */
  open(signal: AbortSignal): Promise<MeteredUpstream>;
  /** A first session.update, folded into the opening configuration; false when it was refused. */
  stage(e: Extract<InternalClientEvent, { type: 'session.update' }>): boolean;
  opened(stagedUpdate: boolean): void;
  /** One client event for the open upstream, in the client's order. */
  apply(e: InternalClientEvent, up: MeteredUpstream): void;
  /** An event beyond MAX_PENDING while the upstream opens. */
  overflow(e: InternalClientEvent): void;
  /** The open failed (after stop() too: the attachment then only logs it). */
  failed(err: unknown): void;
  log: Logger;
}

/**
 * The attachment's upstream: opened at the client's first event (a first session.update is folded into the
 * opening configuration, so the provider never starts on other settings), events meanwhile queued in order,
 * an open under way aborted when the attachment finishes first.
 */
export class UpstreamLink {
  private state = IDLE;
  private up: MeteredUpstream | null = null;
  private opening: Promise<MeteredUpstream | null> | null = null;
  private readonly abort = new AbortController();
  private pending: InternalClientEvent[] = [];

  constructor(private readonly deps: UpstreamLinkDeps) {}

  get finishing(): boolean {
    return this.state === FINISHING;
  }

  /** The upstream once open (or once the finish settled it); null before. */
  get current(): MeteredUpstream | null {
    return this.up;
  }

  /** The upstream's meter once open (and after close(), for the final checkpoint); zero and no route before. */
  get meter(): UsageReading {
    return this.up === null ? NOTHING_METERED : this.up.meter;
  }

  /** A decoded client event: applied now, or queued while the upstream opens (the first event opens it). */
  accept(e: InternalClientEvent): void {
    if (this.state === OPEN) return this.deps.apply(e, this.up as MeteredUpstream);
    if (this.state === IDLE) {
      if (e.type === 'session.update') return this.deps.stage(e) ? this.open(true) : undefined;
      this.open(false);
    }
    if (this.pending.length >= MAX_PENDING) return this.deps.overflow(e);
    this.pending.push(e);
  }

  /** The attachment finishes: nothing more goes upstream, and an open under way is aborted. */
  stop(): void {
    this.state = FINISHING;
    this.pending = [];
    if (this.up === null) this.abort.abort();
  }

  /** After stop(): the upstream once an open under way has settled, or null when none opened. */
  async settled(): Promise<MeteredUpstream | null> {
    return this.up ?? (await this.opening);
  }

  /** After stop(): closes the settled upstream, whose usage stays readable for the final checkpoint. */
  async close(up: MeteredUpstream | null): Promise<void> {
    if (up) await up.close().catch((err: unknown) => this.deps.log.warn({ err }, 'upstream close failed'));
    this.up = up;
  }

  private open(stagedUpdate: boolean): void {
    this.state = OPENING;
    this.opening = this.deps.open(this.abort.signal).then(
      (up) => {
        if (this.state === FINISHING) return up; // the finish closes it
        this.up = up;
        this.state = OPEN;
        this.deps.opened(stagedUpdate);
        const queued = this.pending;
        this.pending = [];
        for (const e of queued) if (this.state === OPEN) this.deps.apply(e, up);
        return up;
      },
      (err: unknown) => {
        this.deps.failed(err);
        return null;
      },
    );
  }
}
