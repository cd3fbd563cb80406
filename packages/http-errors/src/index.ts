// The one HTTP mapper of the error model: code → status and error.type (decisions.md, Errors), the
// ErrorResponse body, the request id. The control plane and the relay's refusals before the upgrade use it.
import { randomUUID } from 'node:crypto';
import { STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import { ERROR_STATUS, errorTypeForStatus, type ErrorCode, type ErrorResponse } from '@s2s/contract';
import { AppError, errors, INTERNAL_MESSAGE, isAppError } from '@s2s/core';
import { isStoreUnavailableError } from '@s2s/db';

export { PROXY_IDLE_MS, SERVER_KEEP_ALIVE_MS } from './keep-alive.js';

/** A fresh id for every request: sent as `X-Request-Id`, in the error body and in every log line. */
export function newRequestId(): string {
  return `req_${randomUUID().replaceAll('-', '')}`;
}

/** The HTTP status of a code (api-v1 §7). */
export function httpStatus(code: ErrorCode): number {
  return ERROR_STATUS[code];
}

/** Codes a route may answer when its store does not respond: api-v1 names session end's own. */
export type StoreUnavailableCode = 'service_unavailable' | 'session_store_unavailable';

/**
 * Anything thrown as an AppError: AppErrors as they are; what express and body-parser raise for a request
 * they cannot read (malformed JSON, 413, bad path encoding) as 400; an unreachable store as 503 with
 * `storeUnavailable`'s code; everything else as 500 internal_error carrying the original as its cause.
 */
export function toAppError(err: unknown, storeUnavailable: StoreUnavailableCode = 'service_unavailable'): AppError {
  if (isAppError(err)) return err;
  if (isClientHttpError(err)) return errors.invalidRequest('The request could not be read.');
  if (isStoreUnavailableError(err)) {
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

export interface HttpErrorAnswer {
  status: number;
  headers: Record<string, string>;
  body: ErrorResponse;
}

/** The answer to `err`: status, the headers its status calls for, and the ErrorResponse body. */
export function httpErrorAnswer(err: AppError, requestId: string): HttpErrorAnswer {
  const status = httpStatus(err.code);
  const headers: Record<string, string> = {};
  if (status === 401) headers['WWW-Authenticate'] = 'Bearer';
  const retryAfter = err.retryAfterSeconds ?? (status === 503 ? 1 : undefined);
  if (retryAfter !== undefined) headers['Retry-After'] = String(retryAfter);
  return {
    status,
    headers,
    body: {
      error: {
        type: errorTypeForStatus(status),
        code: err.code,
        // An unexpected failure answers the generic message; its detail goes to the log only.
        message: err.code === 'internal_error' ? INTERNAL_MESSAGE : err.message,
        request_id: requestId,
      },
    },
  };
}

/** A 5xx: the caller logs its cause as an error; a 4xx is the client's and at most worth an info line. */
export function isServerError(err: AppError): boolean {
  return httpStatus(err.code) >= 500;
}

/**
 * The answer to `err` on a socket that asked for an upgrade and was refused before it (nothing was upgraded):
 * the relay's checks and the edge's routing. `statusOverride` serves a parser refusal only (431 has no code).
 */
export function writeRawError(socket: Duplex, err: AppError, requestId: string, statusOverride?: number): void {
  if (!socket.writable) {
    socket.destroy();
    return;
  }
  const answer = httpErrorAnswer(err, requestId);
  const status = statusOverride ?? answer.status;
  const body = JSON.stringify(answer.body);
  const extra = Object.entries(answer.headers).map(([name, value]) => `${name}: ${value}`);
  socket.once('finish', () => socket.destroy());
  socket.end(
    [
      `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? ''}`,
      'Connection: close',
      'Content-Type: application/json; charset=utf-8',
      `Content-Length: ${Buffer.byteLength(body)}`,
      `X-Request-Id: ${requestId}`,
      'Cache-Control: no-store',
      ...extra,
      '',
      body,
    ].join('\r\n'),
  );
}

/** A request target's path, without the query: routing on the raw URL, before any parsing. */
export function pathOf(url: string | undefined): string {
  const u = url ?? '/';
  const q = u.indexOf('?');
  return q === -1 ? u : u.slice(0, q);
}
