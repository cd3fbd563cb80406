import type { Logger } from '@s2s/telemetry';
import { backoffMs, sleep } from '../backoff.js';

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
    for (let attempt = 0; this.deps.alive(); attempt++) {
      if (attempt > 0) await sleep(backoffMs(attempt, 100, 5000), { unref: true });
      try {
        await this.deps.store();
        if (attempt > 0) log.info({ attempts: attempt + 1 }, 'session activation stored after retries');
        return this.release();
      } catch (err) {
        log.warn({ err, attempt }, 'session activation failed; retrying');
        this.release();
      }
    }
    log.error('session activation not stored before the attachment ended');
  }

  private release(): void {
    const held = this.held;
    this.held = null;
    if (held) for (const e of held) this.deps.deliver(e);
  }
}
