import { ResponseUsage, type VoiceSession } from '@s2s/contract';

/** Every usage counter of a session, as settlement prices it (decisions.md, "Usage and price by modality"). */
export const USAGE_COUNTERS = ResponseUsage.keyof().options;
export type UsageCounters = ResponseUsage;

/** What a session cost: its status, the settled amount, what it used and what the wallet has left. */
export interface Bill {
  sessionId: string;
  status: VoiceSession['status'];
  /** True once the session is terminal: `billedCents` is final and the reservation released. */
  settled: boolean;
  billedCents: number;
  preauthorizedCents: number;
  /** The wallet's available amount when the resource was produced. */
  walletAvailableCents: number;
  usage: UsageCounters;
  rateSnapshotId: string;
}

const TERMINAL = new Set(['completed', 'cancelled', 'failed', 'expired']);

/** The bill of a session resource (the one `sessions.end` answers is settled). */
export function billOf(session: VoiceSession): Bill {
  const usage = Object.fromEntries(USAGE_COUNTERS.map((c) => [c, session.usage[c]])) as UsageCounters;
  return {
    sessionId: session.id,
    status: session.status,
    settled: TERMINAL.has(session.status),
    billedCents: session.usage.billed_cents,
    preauthorizedCents: session.billing.preauthorized_cents,
    walletAvailableCents: session.billing.balance_cents,
    usage,
    rateSnapshotId: session.usage.rate_snapshot_id,
  };
}
