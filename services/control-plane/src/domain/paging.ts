import type { AdminListPage } from '@s2s/contract';
import { errors } from '@s2s/core';

/**
 * Keyset paging for the operator API's lists: a page is `limit + 1` rows read past the cursor, ordered by a
 * unique key; the extra row only says whether there is more. The cursor is opaque to clients (base64url of
 * the last row's key), so the order key can change without breaking them.
 */
export function encodeCursor(key: readonly (string | number)[]): string {
  return Buffer.from(JSON.stringify(key), 'utf8').toString('base64url');
}

/** The key a cursor carries, checked against the shape the list expects; 400 for anything else. */
export function decodeCursor<T extends readonly ('string' | 'number')[]>(
  cursor: string | undefined,
  shape: T,
): { [K in keyof T]: T[K] extends 'number' ? number : string } | null {
  if (cursor === undefined) return null;
  let key: unknown;
  try {
    key = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    key = null;
  }
  const ok =
    Array.isArray(key) &&
    key.length === shape.length &&
    key.every((v, i) => typeof v === shape[i] && (typeof v !== 'string' || v.length <= 255));
  if (!ok) throw errors.invalidRequest('after: not a cursor this list issued; pass next_cursor from the previous page.');
  return key as { [K in keyof T]: T[K] extends 'number' ? number : string };
}

const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

/** A cursor of a list ordered by (created_at, id): the timestamp as ISO text with milliseconds, then the id. */
export function decodeTimeCursor(cursor: string | undefined): readonly [string, string] | null {
  const key = decodeCursor(cursor, ['string', 'string'] as const);
  if (key && !(ISO_MS.test(key[0]) && isRealInstant(key[0]))) {
    throw errors.invalidRequest('after: not a cursor this list issued; pass next_cursor from the previous page.');
  }
  return key;
}

/** True for a calendar-valid instant (no 30 February), so that PostgreSQL never sees one it refuses. */
function isRealInstant(iso: string): boolean {
  const ms = Date.parse(iso);
  return !Number.isNaN(ms) && new Date(ms).toISOString() === iso;
}

/** Cuts the `limit + 1` rows read into a page. */
export function toPage<R, T>(
  rows: R[],
  limit: number,
  map: (row: R) => T,
  keyOf: (row: R) => readonly (string | number)[],
): AdminListPage<T> {
  const hasMore = rows.length > limit;
  const kept = hasMore ? rows.slice(0, limit) : rows;
  const last = kept[kept.length - 1];
  return {
    object: 'list',
    data: kept.map(map),
    has_more: hasMore,
    next_cursor: hasMore && last !== undefined ? encodeCursor(keyOf(last)) : null,
  };
}
