import { IdempotencyKey } from '@s2s/contract';
import { errors } from '@s2s/core';

/** The Idempotency-Key header: absent, or printable ASCII of 1-255 characters (decisions.md); else 400. */
export function parseIdempotencyKey(header: string | string[] | undefined): string | undefined {
  if (header === undefined) return undefined;
  const parsed = IdempotencyKey.safeParse(header);
  if (!parsed.success) throw errors.invalidRequest('Idempotency-Key must be 1 to 255 printable ASCII characters.');
  return parsed.data;
}
