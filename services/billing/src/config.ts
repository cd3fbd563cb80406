import { CommonEnv, envInt, parseEnv, z } from '@s2s/core';

export const BillingEnv = CommonEnv.extend({
  // How long to wait for every attachment's `final` checkpoint after an end request before the last
  // checkpoint counts (architecture.md, Session lifecycle).
  END_GRACE_MS: envInt(3000, { min: 0, max: 60_000 }),
  // Sweeper period; decisions.md wants expiry acted on within 30 s of the deadline.
  SWEEP_INTERVAL_MS: envInt(5000, { min: 50, max: 30_000 }),
  // Sessions handled per sweeper query, so one sweep stays short whatever the backlog.
  SWEEP_LIMIT: envInt(500, { min: 1, max: 10_000 }),
  // Deliveries of one message before it goes to the dead-letter subject (the consumer's max_deliver).
  MAX_DELIVER: envInt(10, { min: 2, max: 100 }),
  // JetStream ack wait: an unacknowledged message is redelivered after this.
  ACK_WAIT_MS: envInt(30_000, { min: 500, max: 600_000 }),
  // Most messages folded per database transaction; a backlog folds several checkpoints of one attachment
  // into one row, so bigger batches catch up faster. Also the pull size.
  BATCH_SIZE: envInt(5000, { min: 1, max: 20_000 }),
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
  // TEST ONLY: `exit_after_commit` exits the process (code 137) right after any fold or settlement commit,
  // `exit_after_settle` right after a settlement commit, before publishing or acking: the crash tests.
  BILLING_FAULT: z.enum(['', 'exit_after_commit', 'exit_after_settle']).default(''),
});

export type BillingConfig = z.infer<typeof BillingEnv>;

export function loadConfig(env: Record<string, string | undefined>): BillingConfig {
  return parseEnv(
    BillingEnv.superRefine((c, ctx) => {
      if (c.NAK_MAX_MS < c.NAK_BASE_MS) ctx.addIssue({ code: 'custom', path: ['NAK_MAX_MS'], message: 'must be >= NAK_BASE_MS' });
      if (c.BILLING_FAULT !== '' && c.NODE_ENV === 'production') {
        ctx.addIssue({ code: 'custom', path: ['BILLING_FAULT'], message: 'is a test-only hook' });
      }
    }),
    env,
  );
}
