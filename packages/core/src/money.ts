import type { Rate } from '@s2s/contract';

/** Server-measured usage of a session or response, in integers. */
export interface Usage {
  audio_in_ms: number;
  audio_out_ms: number;
  input_audio_tokens: number;
  output_audio_tokens: number;
}

export const ZERO_USAGE: Usage = Object.freeze({
  audio_in_ms: 0,
  audio_out_ms: 0,
  input_audio_tokens: 0,
  output_audio_tokens: 0,
});

/**
 * Reference ratio of audio tokens to milliseconds (input 1 token / 100 ms, output 1 token / 50 ms),
 * used to size the preauthorization and by adapters whose provider reports no token counts.
 */
export const REFERENCE_TOKENS = Object.freeze({ inputMsPerToken: 100, outputMsPerToken: 50 });

const big = (n: number) => BigInt(Math.trunc(n));

function ceilDiv(a: bigint, b: bigint): bigint {
  return a <= 0n ? 0n : (a + b - 1n) / b;
}

/**
 * Cost in milli-cents times 60000, kept exact so that the one rounding happens at the very end:
 * per_minute * ms / 60000 stays a fraction until we divide by 60000 * 1000.
 */
function scaledCost(rate: Rate, usage: Usage): bigint {
  const audioMs = big(usage.audio_in_ms) + big(usage.audio_out_ms);
  if (audioMs === 0n && usage.input_audio_tokens === 0 && usage.output_audio_tokens === 0) return 0n;
  const fee = audioMs > 0n ? big(rate.relay_fee_milli_cents) : 0n;
  const tokens = big(rate.audio_in_token) * big(usage.input_audio_tokens) + big(rate.audio_out_token) * big(usage.output_audio_tokens);
  return big(rate.per_minute) * audioMs + 60000n * (tokens + fee);
}

/**
 * billed_cents = ceil((per_minute * (in_ms + out_ms) / 60000 + in_token * in_tokens + out_token * out_tokens
 * + relay_fee) / 1000), decisions.md "Money"; the relay fee only for a session that relayed audio.
 */
export function billedCents(rate: Rate, usage: Usage): number {
  return Number(ceilDiv(scaledCost(rate, usage), 60_000_000n));
}

/** What settlement charges: the formula, never above the preauthorization. */
export function settledCents(rate: Rate, usage: Usage, preauthorizedCents: number): number {
  return Math.min(billedCents(rate, usage), preauthorizedCents);
}

/**
 * Preauthorization: `minutes` of audio split evenly between input and output, at the reference token
 * ratios, plus the relay fee; at least 1 cent. Deterministic from the rate snapshot.
 */
export function preauthorizationCents(rate: Rate, minutes: number): number {
  const halfMs = Math.round((minutes * 60_000) / 2);
  const usage: Usage = {
    audio_in_ms: halfMs,
    audio_out_ms: halfMs,
    input_audio_tokens: Math.ceil(halfMs / REFERENCE_TOKENS.inputMsPerToken),
    output_audio_tokens: Math.ceil(halfMs / REFERENCE_TOKENS.outputMsPerToken),
  };
  return Math.max(1, billedCents(rate, usage));
}

export function addUsage(a: Usage, b: Usage): Usage {
  return {
    audio_in_ms: a.audio_in_ms + b.audio_in_ms,
    audio_out_ms: a.audio_out_ms + b.audio_out_ms,
    input_audio_tokens: a.input_audio_tokens + b.input_audio_tokens,
    output_audio_tokens: a.output_audio_tokens + b.output_audio_tokens,
  };
}
