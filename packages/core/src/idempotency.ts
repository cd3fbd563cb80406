import { createHash } from 'node:crypto';

/** How long an Idempotency-Key is kept (decisions.md, Errors); the billing sweeper purges older ones. */
export const IDEMPOTENCY_RETENTION_HOURS = 24;

/** JSON with object keys sorted at every depth, so equal requests serialize equally whatever the key order. */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') {
    // Like JSON.stringify: undefined, functions and symbols become null (they only occur inside arrays here).
    return JSON.stringify(value) ?? 'null';
  }
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  const entries = Object.entries(value as Record<string, unknown>)
    .filter(([, v]) => v !== undefined && typeof v !== 'function' && typeof v !== 'symbol')
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
}

/** What "the same request" means for Idempotency-Key: SHA-256 of the canonical JSON of the parsed body. */
export function requestFingerprint(body: unknown): string {
  return createHash('sha256').update(canonicalJson(body)).digest('hex');
}
