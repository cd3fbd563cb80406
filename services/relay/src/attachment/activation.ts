import type { Logger } from '@s2s/telemetry';
import { retry } from '@s2s/core';

/**
 * ready → active on the first accepted input (decisions.md), stored in the background and retried with
 * backoff until the store takes it, while the attachment lives: input was accepted, so the session is
 * active, and an outage must not leave it `ready`. Upstream events are held until the first attempt
 * returns, so no reply to input precedes `active`; a failed attempt does not hold them further.
 */
export class Activation<E> {
  private held: E[] | null = null;

  constructor(
    private activated: boolean,
    private readonly deps: {
      store(): Promise<unknown>;
      deliver(e: E): void;
      alive(): boolean;
      log: Logger;
    },
  ) {}

  /** Called for every accepted input; only the first one of a `ready` session does anything. */
  inputAccepted(): void {
    if (this.activated) return;
    this.activated = true;
    this.held = [];
    void this.run();
  }

  /** An upstream event: delivered now, or after the first activation attempt. */
  pass(e: E): void {
    if (this.held !== null) this.held.push(e);
    else this.deps.deliver(e);
  }

  private async run(): Promise<void> {
    const { log } = this.deps;
    const ended = new Error('the attachment ended');
    const store = async (attempt: number) => {
      if (!this.deps.alive()) throw ended;
      try {
        await this.deps.store();
      } finally {
        this.release();
      }
      if (attempt > 1) log.info({ attempts: attempt }, 'session activation stored after retries');
    };
    await retry(store, {
      baseMs: 100,
      capMs: 5000,
      unref: true,
      shouldRetry: (err) => err !== ended,
      onRetry: (err, attempt) => log.warn({ err, attempt: attempt - 1 }, 'session activation failed; retrying'),
    }).catch(() => log.error('session activation not stored before the attachment ended'));
  }

  private release(): void {
    const held = this.held;
    this.held = null;
    if (held) for (const e of held) this.deps.deliver(e);
  }
}
