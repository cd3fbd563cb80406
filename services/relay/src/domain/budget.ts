import type { Rate } from '@s2s/contract';
import { addUsage, SCALED_COST_PER_CENT, scaledCost, scaledCostIfSafe, type Usage } from '@s2s/core';

/** Where a session's running cost stands against its preauthorization. */
export type BudgetState = 'under' | 'reached' | 'over';

/**
 * The running cost of one session (earlier attachments + this one), every usage counter priced, against
 * its preauthorization, with core's scaled cost (billed_cents = ceil(scaled / 60_000_000)) as the only
 * formula. Integer arithmetic throughout: plain numbers while every intermediate is provably exact, BigInt
 * beyond 2^53, so the state never depends on float rounding.
 */
export class Budget {
  /** ceil(x / S) >= p  <=>  x > (p - 1) * S, and ceil(x / S) > p  <=>  x > p * S. */
  private readonly reachedAbove: bigint;
  private readonly overAbove: bigint;
  /** The same bounds as numbers when exact (else null: always take the BigInt path). */
  private readonly reachedAboveNumber: number | null;

  constructor(
    private readonly rate: Rate,
    readonly preauthorizedCents: number,
    /** Usage already folded from this session's earlier attachments. */
    private readonly prior: Usage,
  ) {
    const p = BigInt(preauthorizedCents);
    this.reachedAbove = (p - 1n) * SCALED_COST_PER_CENT;
    this.overAbove = p * SCALED_COST_PER_CENT;
    const n = Number(this.reachedAbove);
    this.reachedAboveNumber = Number.isSafeInteger(n) && BigInt(n) === this.reachedAbove ? n : null;
  }

  /** The state if `usage` of this attachment had `extraInMs` more input audio. */
  check(usage: Usage, extraInMs = 0): BudgetState {
    const total = addUsage(this.prior, usage);
    total.audio_in_ms += extraInMs;
    const fast = scaledCostIfSafe(this.rate, total);
    if (fast !== null && this.reachedAboveNumber !== null && fast <= this.reachedAboveNumber) return 'under';
    const scaled = scaledCost(this.rate, total);
    if (scaled <= this.reachedAbove) return 'under';
    return scaled <= this.overAbove ? 'reached' : 'over';
  }
}
