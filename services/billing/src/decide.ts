/** Pure decisions of the consumer: when to settle an ended session, and how long to back off a retry. */

export type EndDecision = { action: 'already_settled' } | { action: 'settle' } | { action: 'wait'; delayMs: number };

export interface EndState {
  settled: boolean;
  /** Every attachment of the session has folded its `final` checkpoint (vacuously true with none). */
  allFinal: boolean;
  endRequestedAt: Date;
  now: Date;
  graceMs: number;
  /** JetStream delivery count of the end message (1 on the first delivery). */
  deliveryCount: number;
  maxDeliver: number;
}

/** Waits are rounded up to this, so a message is not redelivered many times for a few milliseconds each. */
export const WAIT_GRANULARITY_MS = 250;
/**
 * On its first delivery an end message waits at least this long (capped by the grace) even if the grace
 * already ran out by the wall clock: a consumer running behind still reaches the relay's final checkpoint,
 * which sits just after the end request in the stream.
 */
export const BACKLOG_FLOOR_MS = 1000;

export function decideEnd(s: EndState): EndDecision {
  if (s.settled) return { action: 'already_settled' };
  if (s.allFinal) return { action: 'settle' };
  let remaining = s.endRequestedAt.getTime() + s.graceMs - s.now.getTime();
  if (s.deliveryCount <= 1) remaining = Math.max(remaining, Math.min(s.graceMs, BACKLOG_FLOOR_MS));
  // The server stops delivering after max_deliver: the last delivery settles whatever has arrived.
  if (remaining <= 0 || s.deliveryCount >= s.maxDeliver) return { action: 'settle' };
  return { action: 'wait', delayMs: Math.ceil(remaining / WAIT_GRANULARITY_MS) * WAIT_GRANULARITY_MS };
}

/** Exponential backoff of a failed message: base, 2×base, 4×base, … capped at `maxMs`. */
export function retryDelayMs(deliveryCount: number, baseMs: number, maxMs: number): number {
  const exponent = Math.min(Math.max(deliveryCount - 1, 0), 30);
  return Math.min(maxMs, baseMs * 2 ** exponent);
}

/** A failed message goes to the dead-letter subject on its last allowed delivery. */
export function isLastDelivery(deliveryCount: number, maxDeliver: number): boolean {
  return deliveryCount >= maxDeliver;
}
