// The one HTTP mapper of the error model: code → status and error.type (decisions.md, Errors), the
// ErrorResponse body, the request id, and the same answer written on a raw socket.
import { randomUUID } from 'node:crypto';
import { STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import { ERROR_STATUS, errorTypeForStatus, type ErrorCode, type ErrorResponse } from '@s2s/contract';
import { INTERNAL_MESSAGE, type AppError } from '@s2s/core';

/** A fresh id for every request: sent as `X-Request-Id`, in the error body and in every log line. */
export function newRequestId(): string {
  return `req_${randomUUID().replaceAll('-', '')}`;
}

/** The HTTP status of a code (api-v1 §7). */
export function httpStatus(code: ErrorCode): number {
  return ERROR_STATUS[code];
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
 * the relay's checks, the edge's routing and what Node's parser refused.
 */
export function writeRawError(socket: Duplex, err: AppError, requestId: string): void {
  if (!socket.writable) {
    socket.destroy();
    return;
  }
  const answer = httpErrorAnswer(err, requestId);
  const status = answer.status;
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
