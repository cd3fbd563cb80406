import type { Rate } from '@s2s/contract';
import { billedCents, type Usage } from '@s2s/core';

/** Where a session's running cost stands against its preauthorization. */
export type BudgetState = 'under' | 'reached' | 'over';

const SCALE = 60_000_000; // billedCents divides the scaled cost by 60000 * 1000 once, at the end.
const EXACT_LIMIT = 2 ** 52;

/**
 * The running cost of one session (earlier attachments + this one) against its preauthorization, with core
 * billedCents as the only formula. Per frame it takes a float screen of the same scaled cost, exact for
 * integers below 2^53, and asks the BigInt formula only near the limit.
 */
export class Budget {
  private readonly reachedAbove: number;

  constructor(
    private readonly rate: Rate,
    readonly preauthorizedCents: number,
    /** Usage already folded from this session's earlier attachments. */
    private readonly prior: Usage,
  ) {
    // ceil(x / SCALE) >= p  <=>  x > (p - 1) * SCALE; a margin keeps the screen clear of float edges.
    this.reachedAbove = (preauthorizedCents - 1) * SCALE - 1000;
  }

  /** The state if `usage` of this attachment had `extraInMs` more input audio. */
  check(usage: Usage, extraInMs = 0): BudgetState {
    const inMs = this.prior.audio_in_ms + usage.audio_in_ms + extraInMs;
    const outMs = this.prior.audio_out_ms + usage.audio_out_ms;
    const inTokens = this.prior.input_audio_tokens + usage.input_audio_tokens;
    const outTokens = this.prior.output_audio_tokens + usage.output_audio_tokens;
    const r = this.rate;
    const fee = inMs + outMs > 0 ? r.relay_fee_milli_cents : 0;
    const scaled = r.per_minute * (inMs + outMs) + 60_000 * (r.audio_in_token * inTokens + r.audio_out_token * outTokens + fee);
    if (scaled <= this.reachedAbove && scaled < EXACT_LIMIT) return 'under';
    const cents = billedCents(r, {
      audio_in_ms: inMs,
      audio_out_ms: outMs,
      input_audio_tokens: inTokens,
      output_audio_tokens: outTokens,
    });
    if (cents < this.preauthorizedCents) return 'under';
    return cents === this.preauthorizedCents ? 'reached' : 'over';
  }
}
