import { USAGE_COUNTER_NAMES, type Rate } from '@s2s/contract';

/**
 * Server-measured usage of a session or response, in integers (decisions.md, "Usage and price by modality").
 * Input token counts exclude cached tokens; `cached_input_tokens` counts cached tokens of any modality;
 * `transcribed_ms` is input audio the provider transcribed on request.
 */
export interface Usage {
  audio_in_ms: number;
  audio_out_ms: number;
  input_audio_tokens: number;
  input_text_tokens: number;
  cached_input_tokens: number;
  output_audio_tokens: number;
  output_text_tokens: number;
  transcribed_ms: number;
}

/** Every usage counter, in the order the contract lists them. */
export const USAGE_COUNTERS = USAGE_COUNTER_NAMES satisfies readonly (keyof Usage)[];
export type UsageCounter = (typeof USAGE_COUNTERS)[number];

export const ZERO_USAGE: Readonly<Usage> = Object.freeze({
  audio_in_ms: 0,
  audio_out_ms: 0,
  input_audio_tokens: 0,
  input_text_tokens: 0,
  cached_input_tokens: 0,
  output_audio_tokens: 0,
  output_text_tokens: 0,
  transcribed_ms: 0,
});

/** A Usage from a partial one (absent counters are 0), e.g. a version-1 checkpoint that had audio counters only. */
export function usageOf(partial: Partial<Usage>): Usage {
  return { ...ZERO_USAGE, ...partial };
}

export function addUsage(a: Usage, b: Usage): Usage {
  return {
    audio_in_ms: a.audio_in_ms + b.audio_in_ms,
    audio_out_ms: a.audio_out_ms + b.audio_out_ms,
    input_audio_tokens: a.input_audio_tokens + b.input_audio_tokens,
    input_text_tokens: a.input_text_tokens + b.input_text_tokens,
    cached_input_tokens: a.cached_input_tokens + b.cached_input_tokens,
    output_audio_tokens: a.output_audio_tokens + b.output_audio_tokens,
    output_text_tokens: a.output_text_tokens + b.output_text_tokens,
    transcribed_ms: a.transcribed_ms + b.transcribed_ms,
  };
}

/** Every rate of a `Rate`, in the order the contract lists them; the database columns bear the same names. */
export const RATE_FIELDS = [
  'per_minute',
  'audio_in_token',
  'audio_out_token',
  'text_in_token',
  'text_out_token',
  'cached_in_token',
  'transcription_per_minute',
  'relay_fee_milli_cents',
] as const satisfies readonly (keyof Rate)[];
export type RateField = (typeof RATE_FIELDS)[number];
// Compile-time proof that RATE_FIELDS names every rate.
const _everyRate: Record<Exclude<keyof Rate, RateField>, never> = {};
void _everyRate;

/**
 * The seeded catalog's selling rate, milli-cents (`npm start`, tests): audio tokens 10 in / 20 out; text tokens
 * a fifth (in) and two fifths (out) of the audio rates, cached input a tenth of text input (at least 1),
 * transcription 0.6 cents a minute.
 */
export const SEED_RATE: Readonly<Rate> = Object.freeze({
  per_minute: 1000,
  audio_in_token: 10,
  audio_out_token: 20,
  text_in_token: 2,
  text_out_token: 8,
  cached_in_token: 1,
  transcription_per_minute: 600,
  relay_fee_milli_cents: 500,
});

export function sameUsage(a: Usage, b: Usage): boolean {
  return USAGE_COUNTERS.every((k) => a[k] === b[k]);
}

/** True when any counter is non-zero: the relay fee is charged then, and only then. */
export function hasUsage(u: Usage): boolean {
  return USAGE_COUNTERS.some((k) => u[k] !== 0);
}

/**
 * Reference ratio of audio tokens to milliseconds (input 1 token / 100 ms, output 1 token / 50 ms),
 * used to size the preauthorization and by adapters whose provider reports no token counts.
 */
export const REFERENCE_TOKENS = Object.freeze({ inputMsPerToken: 100, outputMsPerToken: 50 });

const big = (n: number) => BigInt(Math.trunc(n));

function ceilDiv(a: bigint, b: bigint): bigint {
  return a <= 0n ? 0n : (a + b - 1n) / b;
}

/** The scaled cost's divisor: 60000 (per-minute rates) times 1000 (milli-cents per cent). */
export const SCALED_COST_PER_CENT = 60_000_000n;

/**
 * The formula's terms, each `rate * counter * weight` in milli-cents times 60000: per-minute rates apply to
 * milliseconds (weight 1, the 60000 stays in the divisor), per-token rates to tokens (weight 60000). The
 * relay fee, weight 60000, is added when any usage at all was produced.
 */
const COST_TERMS: readonly (readonly [RateField, UsageCounter, number])[] = [
  ['per_minute', 'audio_in_ms', 1],
  ['per_minute', 'audio_out_ms', 1],
  ['audio_in_token', 'input_audio_tokens', 60_000],
  ['audio_out_token', 'output_audio_tokens', 60_000],
  ['text_in_token', 'input_text_tokens', 60_000],
  ['text_out_token', 'output_text_tokens', 60_000],
  ['cached_in_token', 'cached_input_tokens', 60_000],
  ['transcription_per_minute', 'transcribed_ms', 1],
];
const FEE_WEIGHT = 60_000;

/**
 * Cost in milli-cents times 60000, kept exact so that the one rounding happens at the very end:
 * per_minute * ms / 60000 stays a fraction until we divide by 60000 * 1000.
 */
export function scaledCost(rate: Rate, usage: Usage): bigint {
  if (!hasUsage(usage)) return 0n;
  let sum = big(rate.relay_fee_milli_cents) * BigInt(FEE_WEIGHT);
  for (const [r, c, w] of COST_TERMS) sum += big(rate[r]) * big(usage[c]) * BigInt(w);
  return sum;
}

/**
 * The same scaled cost in plain numbers when it is exact, else null (then use scaledCost). Every term is a
 * non-negative integer, so a product or sum past 2^53 stays past it after rounding: checking each
 * intermediate with Number.isSafeInteger proves every one exact. The budget's per-frame path.
 */
export function scaledCostIfSafe(rate: Rate, usage: Usage): number | null {
  if (!hasUsage(usage)) return 0;
  let sum = rate.relay_fee_milli_cents * FEE_WEIGHT;
  if (!Number.isSafeInteger(sum)) return null;
  for (const [r, c, w] of COST_TERMS) {
    const product = rate[r] * usage[c];
    const term = product * w;
    sum += term;
    if (!Number.isSafeInteger(product) || !Number.isSafeInteger(term) || !Number.isSafeInteger(sum)) return null;
  }
  return sum;
}

/**
 * billed_cents = ceil((per_minute * (audio_in_ms + audio_out_ms) / 60000 + audio_in_token * input_audio_tokens
 * + audio_out_token * output_audio_tokens + text_in_token * input_text_tokens + text_out_token * output_text_tokens
 * + cached_in_token * cached_input_tokens + transcription_per_minute * transcribed_ms / 60000 + relay_fee) / 1000),
 * decisions.md "Usage and price by modality"; the relay fee only when any usage at all was produced.
 */
export function billedCents(rate: Rate, usage: Usage): number {
  return Number(ceilDiv(scaledCost(rate, usage), SCALED_COST_PER_CENT));
}

/** What settlement charges: the formula, never above the preauthorization. */
export function settledCents(rate: Rate, usage: Usage, preauthorizedCents: number): number {
  return Math.min(billedCents(rate, usage), preauthorizedCents);
}

/**
 * Preauthorization: `minutes` of audio split evenly between input and output, at the reference token
 * ratios, plus the relay fee; at least 1 cent. Deterministic from the rate snapshot. Text, cached tokens
 * and transcription are not part of it: the budget ends a session whose running cost of every counter reaches it.
 */
export function preauthorizationCents(rate: Rate, minutes: number): number {
  const halfMs = Math.round((minutes * 60_000) / 2);
  const usage = usageOf({
    audio_in_ms: halfMs,
    audio_out_ms: halfMs,
    input_audio_tokens: Math.ceil(halfMs / REFERENCE_TOKENS.inputMsPerToken),
    output_audio_tokens: Math.ceil(halfMs / REFERENCE_TOKENS.outputMsPerToken),
  });
  return Math.max(1, billedCents(rate, usage));
}
