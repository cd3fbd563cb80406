/**
 * The JetStream mapper: what a handler's outcome means for the message (ack, nak with a delay, or a copy
 * to the dead-letter subject and term). Pure, so the policy is unit-tested without a broker.
 */
import { backoffMs } from '@s2s/core';

/** What a handler says about one message. */
export type Outcome = { kind: 'ack' } | { kind: 'wait'; delayMs: number } | { kind: 'fail'; err: unknown; reason: string };

export type Verdict = { action: 'ack' } | { action: 'nak'; delayMs: number; retry: boolean } | { action: 'dead_letter'; reason: string };

export interface RetryPolicy {
  /** Deliveries of one message (the consumer's max_deliver): a failure on the last one dead-letters it. */
  maxDeliver: number;
  /** First retry delay of a failed message; doubles per delivery up to `nakMaxMs`. */
  nakBaseMs: number;
  nakMaxMs: number;
}

export const ACK: Outcome = { kind: 'ack' };

/**
 * Whether an error may go away on a retry. Errors that say (`retryable`, as `AppError` does) are taken at
 * their word; anything else is unexpected and retried, since a bug or a transient fault is not a poison message.
 */
export function isRetryableError(err: unknown): boolean {
  if (typeof err === 'object' && err !== null && 'retryable' in err && typeof err.retryable === 'boolean') return err.retryable;
  return true;
}

/** Exponential backoff of a failed message: base, 2×base, 4×base, … capped at `maxMs` (exact: no jitter). */
export function retryDelayMs(deliveryCount: number, baseMs: number, maxMs: number): number {
  return backoffMs(deliveryCount, baseMs, maxMs, 0);
}

/** A failed message goes to the dead-letter subject on its last allowed delivery. */
export function isLastDelivery(deliveryCount: number, maxDeliver: number): boolean {
  return deliveryCount >= maxDeliver;
}

export function verdictFor(
  outcome: Outcome,
  deliveryCount: number,
  policy: RetryPolicy,
  isRetryable: (err: unknown) => boolean = isRetryableError,
): Verdict {
  if (outcome.kind === 'ack') return { action: 'ack' };
  if (outcome.kind === 'wait') return { action: 'nak', delayMs: Math.max(0, outcome.delayMs), retry: false };
  if (!isRetryable(outcome.err)) return { action: 'dead_letter', reason: outcome.reason };
  if (isLastDelivery(deliveryCount, policy.maxDeliver)) return { action: 'dead_letter', reason: outcome.reason };
  return { action: 'nak', delayMs: retryDelayMs(deliveryCount, policy.nakBaseMs, policy.nakMaxMs), retry: true };
}
