/** Pure decisions of billing: is a relay gone, when to settle an ended session, and its final status. */
import type { TerminalStatus } from '@s2s/contract';
import { hasUsage, type Usage } from '@s2s/core';

export { isLastDelivery, retryDelayMs } from '@s2s/bus';

/** `alive`: lease unexpired. `gone`: no lease, or expired while the store was up. `unknown`: lapsed in an outage. */
export type RelayState = 'alive' | 'gone' | 'unknown';

export interface LeaseView {
  /** Whether the relay has a lease row at all (a clean exit deletes it after publishing every final). */
  exists: boolean;
  /** expires_at > now() by the database's clock. */
  unexpired: boolean;
}

/**
 * The lease rule. A relay renews its lease every few seconds while it can reach the store; so an expired
 * lease proves the relay gone only if the store has been reachable, as billing saw it, for a whole TTL.
 * A lease that lapsed during an outage that billing also saw is `unknown`, and waited for like a live one.
 */
export function relayState(lease: LeaseView, storeUpForMs: number, leaseTtlMs: number): RelayState {
  if (!lease.exists) return 'gone';
  if (lease.unexpired) return 'alive';
  return storeUpForMs >= leaseTtlMs ? 'gone' : 'unknown';
}

export type SettleReason = 'all_final' | 'relays_gone' | 'live_wait_exceeded' | 'last_delivery';

export type EndDecision = { action: 'already_settled' } | { action: 'settle'; reason: SettleReason } | { action: 'wait'; delayMs: number };

export interface EndState {
  settled: boolean;
  /** The relay state of each attachment that has not folded its `final` checkpoint (empty: all final). */
  pending: readonly RelayState[];
  endRequestedAt: Date;
  /** When the wait for live relays began: the later of the end's announcement and billing's last outage. */
  liveWaitFrom: Date;
  now: Date;
  graceMs: number;
  liveMaxWaitMs: number;
  /** How often a wait for a live relay looks again at the leases (a relay that died meanwhile). */
  recheckMs: number;
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

/**
 * Settles when every attachment is final; otherwise waits the grace for gone relays and, for live (or
 * unknown) ones, until their final arrives (the fold settles then) or `liveMaxWaitMs` after `liveWaitFrom`.
 * The server stops delivering after max_deliver, so the last delivery settles whatever has arrived, and the
 * one before it waits out the whole remaining bound.
 */
export function decideEnd(s: EndState): EndDecision {
  if (s.settled) return { action: 'already_settled' };
  if (s.pending.length === 0) return { action: 'settle', reason: 'all_final' };
  let grace = s.endRequestedAt.getTime() + s.graceMs - s.now.getTime();
  if (s.deliveryCount <= 1) grace = Math.max(grace, Math.min(s.graceMs, BACKLOG_FLOOR_MS));
  const waitingLive = s.pending.some((r) => r !== 'gone');
  const live = waitingLive ? s.liveWaitFrom.getTime() + s.liveMaxWaitMs - s.now.getTime() : 0;
  const remaining = Math.max(grace, live);
  if (remaining <= 0) return { action: 'settle', reason: waitingLive ? 'live_wait_exceeded' : 'relays_gone' };
  if (s.deliveryCount >= s.maxDeliver) return { action: 'settle', reason: 'last_delivery' };
  const lastButOne = s.deliveryCount >= s.maxDeliver - 1;
  const delay = waitingLive && !lastButOne ? Math.max(grace, Math.min(live, s.recheckMs)) : remaining;
  return { action: 'wait', delayMs: Math.ceil(delay / WAIT_GRANULARITY_MS) * WAIT_GRANULARITY_MS };
}

/** Any counter above zero: input was accepted (output follows input), so the session was active. */
export function showsAcceptedInput(u: Usage): boolean {
  return hasUsage(u);
}

/**
 * The status a session settles with. `cancelled` means "still ready when the end was recorded"; if its
 * attachments show accepted input, the activation was lost (e.g. a store outage at the first input) and
 * decisions.md makes such a session active, so it ends `completed`.
 */
export function settledStatus(terminal: TerminalStatus, usage: Usage): TerminalStatus {
  return terminal === 'cancelled' && showsAcceptedInput(usage) ? 'completed' : terminal;
}
