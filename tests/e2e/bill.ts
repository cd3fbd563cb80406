// The bill of decisions.md, computed on its own (never the gateway's code): the e2e tests compare it to
// what billing settled.
import type { Usage } from '@s2s/core';

/** decisions.md, "Usage and price by modality": integer arithmetic, one rounding up at the end. */
export function expectedCents(rate: Record<string, number>, u: Usage): number {
  const r = (k: string) => {
    const v = rate[k];
    if (typeof v !== 'number') throw new Error(`the catalog has no pricing.${k}`);
    return BigInt(v);
  };
  const per60000 = r('per_minute') * BigInt(u.audio_in_ms + u.audio_out_ms) + r('transcription_per_minute') * BigInt(u.transcribed_ms);
  const rest =
    r('audio_in_token') * BigInt(u.input_audio_tokens) +
    r('audio_out_token') * BigInt(u.output_audio_tokens) +
    r('text_in_token') * BigInt(u.input_text_tokens) +
    r('text_out_token') * BigInt(u.output_text_tokens) +
    r('cached_in_token') * BigInt(u.cached_input_tokens) +
    r('relay_fee_milli_cents');
  // ceil((per60000 / 60000 + rest) / 1000) without rounding the first term on its own
  const numerator = per60000 + rest * 60000n;
  const denominator = 60000n * 1000n;
  return Number((numerator + denominator - 1n) / denominator);
}
