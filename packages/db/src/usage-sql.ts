import { RATE_FIELDS, USAGE_COUNTERS, type RateField, type Usage } from '@s2s/core';
import { z } from 'zod';

// The usage counters and rates have columns of the same names wherever they are kept (voice_sessions,
// session_attachments, settlements; rate_snapshots), so every query lists them from one place.

/** `a.audio_in_ms, a.audio_out_ms, ...` (bigint columns come back as numbers, see client.ts). */
export function usageColumns(alias: string): string {
  return USAGE_COUNTERS.map((c) => `${alias}.${c}`).join(', ');
}

/** `coalesce(sum(a.audio_in_ms), 0)::float8 AS audio_in_ms, ...`: the sum of several rows' usage. */
export function usageSums(alias: string): string {
  return USAGE_COUNTERS.map((c) => `coalesce(sum(${alias}.${c}), 0)::float8 AS ${c}`).join(', ');
}

/** `r.per_minute, r.audio_in_token, ...` */
export function rateColumns(alias: string): string {
  return RATE_FIELDS.map((c) => `${alias}.${c}`).join(', ');
}

/** The counters of a row selected with usageColumns or usageSums. */
export function usageFromRow(row: Record<keyof Usage, number>): Usage {
  return Object.fromEntries(USAGE_COUNTERS.map((c) => [c, Number(row[c])])) as Record<keyof Usage, number>;
}

/** The rate of a row selected with rateColumns (a Rate: the same fields); absent (LEFT JOIN) reads as 0. */
export function rateFromRow(row: Record<RateField, number | null>): Record<RateField, number> {
  return Object.fromEntries(RATE_FIELDS.map((c) => [c, Number(row[c] ?? 0)])) as Record<RateField, number>;
}

/** The row schema's part for usageColumns or usageSums (statement.ts): every counter a number. */
export const usageRowShape = numberShape(USAGE_COUNTERS);

/** The row schema's part for rateColumns: every rate a number. */
export const rateRowShape = numberShape(RATE_FIELDS);

function numberShape<K extends string>(keys: readonly K[]): { [k in K]: z.ZodNumber } {
  return Object.fromEntries(keys.map((k) => [k, z.number()])) as { [k in K]: z.ZodNumber };
}
