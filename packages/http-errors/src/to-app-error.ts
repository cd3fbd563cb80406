import { AppError, errors, isAppError } from '@s2s/core';

/** Codes a route may answer when its store does not respond: api-v1 names session end's own. */
export type StoreUnavailableCode = 'service_unavailable' | 'session_store_unavailable';

/**
 * Tells an outage of the store a server depends on (its database not answering) from any other failure: each
 * server passes its own (`isStoreUnavailableError` of @s2s/db), so this package loads no database driver.
 */
export type IsStoreOutage = (err: unknown) => boolean;

/**
 * Anything thrown as an AppError: AppErrors as they are; what express and body-parser raise for a request
 * they cannot read (malformed JSON, 413, bad path encoding) as 400; a store outage (`isStoreOutage`) as 503
 * with `storeUnavailable`'s code; everything else as 500 internal_error carrying the original as its cause.
 */
export function toAppError(
  err: unknown,
  isStoreOutage: IsStoreOutage,
  storeUnavailable: StoreUnavailableCode = 'service_unavailable',
): AppError {
  if (isAppError(err)) return err;
  if (isClientHttpError(err)) return errors.invalidRequest('The request could not be read.');
  if (isStoreOutage(err)) {
    return storeUnavailable === 'session_store_unavailable' ? errors.sessionStoreUnavailable(err) : errors.serviceUnavailable(err);
  }
  return errors.internal(err);
}

/** What express and body-parser raise for a request they cannot read (http-errors, or the router's URIError). */
function isClientHttpError(err: unknown): boolean {
  if (typeof err !== 'object' || err === null) return false;
  const status = (err as { status?: unknown; statusCode?: unknown }).status ?? (err as { statusCode?: unknown }).statusCode;
  return typeof status === 'number' && status >= 400 && status < 500;
}
