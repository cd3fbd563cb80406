// Failures arrive as a pg error (SQLSTATE `code`), a Node socket error, a pg-pool Error Prisma passes
// through untouched, or Prisma's KnownRequestError (P-code) holding the adapter's DriverAdapterError in
// `meta.driverAdapterError`, whose `cause` is `{ kind, originalCode }`. Raw queries always say P2010.
import { isAppError } from '@s2s/core';

/** Serialization failure and deadlock: the transaction lost a race and may simply run again. */
const CONFLICT_CODES = new Set(['40001', '40P01', 'P2034']);
const CONFLICT_KINDS = new Set(['TransactionWriteConflict']);

const UNAVAILABLE_CODES = new Set([
  // Node sockets: refused, reset, timed out, unresolvable or unroutable host.
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  // PostgreSQL: admin/crash shutdown, starting up or shutting down, too many connections.
  '57P01',
  '57P02',
  '57P03',
  '53300',
  // Prisma: unreachable, connect timeout, socket timeout, connection closed, pool timeout, too many connections.
  'P1001',
  'P1002',
  'P1008',
  'P1017',
  'P2024',
  'P2037',
]);
const UNAVAILABLE_KINDS = new Set(['DatabaseNotReachable', 'ConnectionClosed', 'SocketTimeout', 'TooManyConnections']);
// pg and pg-pool raise these without any code.
const UNAVAILABLE_MESSAGES = [
  /timeout exceeded when trying to connect/i,
  /Connection terminated/i,
  /Client has encountered a connection error/i,
];

/** The database is down, unreachable or out of connections: answer 503 and let the caller retry later. */
export function isStoreUnavailableError(err: unknown): boolean {
  return someLink(err, isUnavailableLink);
}

/** Worth running the whole transaction again: a lost serialization race, a deadlock or a connection failure. */
export function isRetryableDbError(err: unknown): boolean {
  return someLink(err, (link) => isConflictLink(link) || isUnavailableLink(link));
}

type Link = Record<string, unknown>;

function isConflictLink(link: Link): boolean {
  return hasCode(link, CONFLICT_CODES) || CONFLICT_KINDS.has(String(link.kind));
}

function isUnavailableLink(link: Link): boolean {
  if (hasCode(link, UNAVAILABLE_CODES) || UNAVAILABLE_KINDS.has(String(link.kind))) return true;
  // SQLSTATE class 08: connection exceptions.
  if (/^08[0-9A-Z]{3}$/.test(String(link.code ?? link.originalCode))) return true;
  return typeof link.message === 'string' && link.code === undefined && UNAVAILABLE_MESSAGES.some((re) => re.test(String(link.message)));
}

function hasCode(link: Link, codes: Set<string>): boolean {
  return codes.has(String(link.code)) || codes.has(String(link.originalCode));
}

/** Visits the error, its causes, Prisma's wrapped adapter error and AggregateError members. */
function someLink(err: unknown, test: (link: Link) => boolean): boolean {
  const seen = new Set<unknown>();
  const queue: unknown[] = [err];
  while (queue.length > 0 && seen.size < 32) {
    const link = queue.shift();
    if (typeof link !== 'object' || link === null || seen.has(link)) continue;
    seen.add(link);
    const rec = link as Link;
    if (test(rec)) return true;
    const meta = rec.meta as Link | undefined;
    queue.push(rec.cause, meta?.driverAdapterError, ...(Array.isArray(rec.errors) ? rec.errors : []));
  }
  return false;
}

/**
 * Whether the same work may succeed if run again, for any error a transport maps: an AppError says so
 * itself; anything else is retryable when the database lost a race or could not be reached.
 */
export function isRetryable(err: unknown): boolean {
  return isAppError(err) ? err.retryable : isRetryableDbError(err);
}
