import type { DbHandle } from '@s2s/db';
import type { Logger } from '@s2s/telemetry';

/**
 * This relay's liveness row in `relay_leases`, which billing reads (docs/billing.md, "Relays"): renewed
 * every `renewMs` to the database's now() + `ttlMs` for as long as the process lives, failures included,
 * and deleted on a clean exit only once every final checkpoint is published.
 */
export class RelayLease {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | null = null;
  private stopped = false;
  private failures = 0;
  private held = false;

  constructor(private readonly deps: { db: DbHandle; relayId: string; renewMs: number; ttlMs: number; logger: Logger }) {}

  /** The last renewal reached the database. */
  get isHeld(): boolean {
    return this.held;
  }

  start(): void {
    if (this.timer || this.stopped) return;
    this.schedule(0);
  }

  /** One renewal now (also what the timer runs); never rejects. */
  renew(): Promise<void> {
    this.running ??= (async () => {
      const { db, relayId, ttlMs, logger } = this.deps;
      try {
        await db.pool.query(
          `INSERT INTO relay_leases (relay_id, expires_at, renewed_at)
           VALUES ($1, now() + $2 * interval '1 millisecond', now())
           ON CONFLICT (relay_id) DO UPDATE SET expires_at = excluded.expires_at, renewed_at = excluded.renewed_at`,
          [relayId, ttlMs],
        );
        if (this.failures > 0) logger.info({ relay_id: relayId, failures: this.failures }, 'relay lease renewed again');
        this.failures = 0;
        this.held = true;
      } catch (err) {
        this.failures++;
        this.held = false;
        if (this.failures <= 3 || this.failures % 10 === 0)
          logger.warn({ err, relay_id: relayId, failures: this.failures }, 'relay lease renewal failed');
      } finally {
        this.running = null;
      }
    })();
    return this.running;
  }

  /** Deletes the lease: the relay holds no unpublished usage any more. Stops renewing either way. */
  async release(): Promise<void> {
    this.stop();
    if (this.running) await this.running;
    try {
      await this.deps.db.pool.query('DELETE FROM relay_leases WHERE relay_id = $1', [this.deps.relayId]);
    } catch (err) {
      // It expires within the TTL anyway; billing then treats this relay as gone, which it is.
      this.deps.logger.warn({ err, relay_id: this.deps.relayId }, 'relay lease release failed');
    }
    this.held = false;
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
  }

  private schedule(ms: number): void {
    this.timer = setTimeout(() => {
      void this.renew().then(() => {
        if (!this.stopped) this.schedule(this.deps.renewMs);
      });
    }, ms);
    this.timer.unref();
  }
}
