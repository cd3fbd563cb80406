import { CommonEnv, envInt, parseEnv, z } from '@s2s/core';

export const BillingEnv = CommonEnv.extend({
  // How long to wait for the `final` checkpoint of an attachment whose relay is gone (no live lease) after
  // an end request, before its last checkpoint counts (docs/billing.md, "Waiting for finals").
  END_GRACE_MS: envInt(3000, { min: 0, max: 60_000 }),
  // Upper bound of the wait for the `final` checkpoint of an attachment whose relay is alive, counted from
  // the end's announcement or from billing's last bus or store outage, whichever is later (docs/billing.md).
  END_LIVE_RELAY_MAX_WAIT_MS: envInt(60_000, { min: 0, max: 600_000 }),
  // The relays' lease TTL (RELAY_LEASE_TTL_MS): an expired lease means a gone relay only once the store has
  // been reachable to billing this long, so a lease that lapsed in an outage is never taken for a dead relay.
  RELAY_LEASE_TTL_MS: envInt(10_000, { min: 1000, max: 300_000 }),
  // How often billing checks that the store answers (the outage clock of the lease rule).
  STORE_PROBE_MS: envInt(1000, { min: 100, max: 10_000 }),
  // Sweeper period; decisions.md wants expiry acted on within 30 s of the deadline.
  SWEEP_INTERVAL_MS: envInt(5000, { min: 50, max: 30_000 }),
  // Sessions handled per sweeper query, so one sweep stays short whatever the backlog.
  SWEEP_LIMIT: envInt(500, { min: 1, max: 10_000 }),
  // Deliveries of one message before it goes to the dead-letter subject (the consumer's max_deliver).
  MAX_DELIVER: envInt(10, { min: 2, max: 100 }),
  // JetStream ack wait: an unacknowledged message is redelivered after this.
  ACK_WAIT_MS: envInt(30_000, { min: 500, max: 600_000 }),
  // Most messages folded per database transaction. A batch writes one row per attachment whatever its number
  // of checkpoints, so the bigger it is the more checkpoints each row write folds: 50,000 is 1.25 s of the
  // 250 ms checkpoints of 10,000 live sessions, 5 per row (docs/benchmarks.md). Pulls stay at 10,000 a request.
  BATCH_SIZE: envInt(50_000, { min: 1, max: 100_000 }),
  // How long a batch waits for more checkpoints, from the arrival of its oldest message, before it is folded
  // (unless it is full): one row write per attachment then carries this window's checkpoints. An end request
  // or a final checkpoint is folded at once (settlement waits for it). It adds to how stale the stored usage
  // and activity of a live session may be (docs/billing.md, "Fold window"). Off by default (0: fold whatever
  // has arrived): a live session's usage is then as fresh as its last checkpoint plus one fold. At most a
  // quarter of ACK_WAIT_MS is used: a message waits out the window unacknowledged.
  FOLD_WINDOW_MS: envInt(0, { min: 0, max: 5000 }),
  // First retry delay of a message whose processing failed; doubles per delivery up to NAK_MAX_MS.
  NAK_BASE_MS: envInt(500, { min: 1, max: 60_000 }),
  NAK_MAX_MS: envInt(30_000, { min: 1, max: 600_000 }),
  // Sessions settled at once (each its own transaction).
  SETTLE_CONCURRENCY: envInt(4, { min: 1, max: 64 }),
  // Port of /healthz and /readyz for probes; unset runs none (several test consumers share a machine).
  HEALTH_PORT: z.coerce.number().int().min(0).max(65535).optional(),
  HOST: z.string().default('127.0.0.1'),
  // Database connections of this process.
  DB_POOL_SIZE: envInt(8, { min: 2, max: 100 }),
});

export type BillingConfig = z.infer<typeof BillingEnv>;

export function loadConfig(env: Record<string, string | undefined>): BillingConfig {
  return parseEnv(
    BillingEnv.superRefine((c, ctx) => {
      if (c.NAK_MAX_MS < c.NAK_BASE_MS) ctx.addIssue({ code: 'custom', path: ['NAK_MAX_MS'], message: 'must be >= NAK_BASE_MS' });
      // The live wait must outlast the grace, and store probes must see any outage long enough to lapse a lease.
      if (c.END_LIVE_RELAY_MAX_WAIT_MS < c.END_GRACE_MS) {
        ctx.addIssue({ code: 'custom', path: ['END_LIVE_RELAY_MAX_WAIT_MS'], message: 'must be >= END_GRACE_MS' });
      }
      if (c.STORE_PROBE_MS * 2 > c.RELAY_LEASE_TTL_MS) {
        ctx.addIssue({ code: 'custom', path: ['STORE_PROBE_MS'], message: 'must be <= RELAY_LEASE_TTL_MS / 2' });
      }
    }),
    env,
  );
}
