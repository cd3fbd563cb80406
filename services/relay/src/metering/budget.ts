import type { Rate } from '@s2s/contract';
import { addUsage, hasUsage, SCALED_COST_PER_CENT, scaledCost, scaledCostIfSafe, type Usage } from '@s2s/core';

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
  /**
   * The last full check that found 'under', with usage: its counters other than audio, its audio ms (in +
   * out + extra) and how many more audio ms stay under. Audio costs per_minute per ms either way and every
   * rate is >= 0, so the same other counters with at most that much more audio are under too: per frame
   * the check is a comparison (the other counters change only when a response is reported).
   */
  private under: { others: Usage; audioMs: number; headroomMs: number } | null = null;

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
    const audioMs = usage.audio_in_ms + usage.audio_out_ms + extraInMs;
    const u = this.under;
    if (u !== null && audioMs >= u.audioMs && audioMs - u.audioMs <= u.headroomMs && sameOthers(u.others, usage)) return 'under';
    const total = addUsage(this.prior, usage);
    total.audio_in_ms += extraInMs;
    const fast = scaledCostIfSafe(this.rate, total);
    const scaled = fast !== null && this.reachedAboveNumber !== null ? null : scaledCost(this.rate, total);
    const under = scaled === null ? (fast as number) <= (this.reachedAboveNumber as number) : scaled <= this.reachedAbove;
    if (under) {
      // Without any usage yet, the first audio also brings the relay fee: no headroom is assumed then.
      if (hasUsage(total)) {
        const room = this.reachedAbove - (scaled ?? BigInt(fast as number));
        const perMs = BigInt(Math.trunc(this.rate.per_minute));
        const headroomMs = perMs === 0n ? Number.MAX_SAFE_INTEGER : Number(room / perMs);
        this.under = { others: { ...usage }, audioMs, headroomMs };
      }
      return 'under';
    }
    const exact = scaled ?? scaledCost(this.rate, total);
    return exact <= this.overAbove ? 'reached' : 'over';
  }
}

function sameOthers(a: Usage, b: Usage): boolean {
  return (
    a.input_audio_tokens === b.input_audio_tokens &&
    a.output_audio_tokens === b.output_audio_tokens &&
    a.input_text_tokens === b.input_text_tokens &&
    a.output_text_tokens === b.output_text_tokens &&
    a.cached_input_tokens === b.cached_input_tokens &&
    a.transcribed_ms === b.transcribed_ms
  );
}
