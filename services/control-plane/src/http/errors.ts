import type { ErrorRequestHandler, Request, RequestHandler, Response } from 'express';
import { errorTypeForStatus, type ErrorResponse } from '@s2s/contract';
import { AppError, errors, isAppError } from '@s2s/core';
import { isStoreUnavailableError } from '@s2s/db';
import { locals, requestLog } from './request-context.js';

const INTERNAL_MESSAGE = 'An internal error occurred. Quote the request id when contacting support.';

export function storeUnavailable(cause: unknown): AppError {
  return new AppError('service_unavailable', 'The service is temporarily unavailable; retry later.', { cause });
}

/**
 * Maps anything thrown to the one public error model: AppErrors as they are; body-parser and router
 * client errors (malformed JSON, 413, bad path encoding) to 400; an unreachable store to 503;
 * everything else to 500 with a generic message.
 */
export function toAppError(err: unknown): AppError {
  if (isAppError(err)) return err;
  if (isClientHttpError(err)) return errors.invalidRequest('The request could not be read.');
  if (isStoreUnavailableError(err)) return storeUnavailable(err);
  return new AppError('internal_error', INTERNAL_MESSAGE, { cause: err });
}

/** What express and body-parser raise for a request they cannot read (http-errors, or the router's URIError). */
function isClientHttpError(err: unknown): boolean {
  if (typeof err !== 'object' || err === null) return false;
  const status = (err as { status?: unknown; statusCode?: unknown }).status ?? (err as { statusCode?: unknown }).statusCode;
  return typeof status === 'number' && status >= 400 && status < 500;
}

export function sendError(res: Response, err: AppError): void {
  const l = locals(res);
  const body: ErrorResponse = {
    error: {
      type: errorTypeForStatus(err.status),
      code: err.code,
      message: err.status >= 500 && err.code === 'internal_error' ? INTERNAL_MESSAGE : err.message,
      request_id: l.requestId,
    },
  };
  l.errorCode = err.code;
  if (err.status === 401) res.setHeader('WWW-Authenticate', 'Bearer');
  const retryAfter = err.retryAfterSeconds ?? (err.status === 503 ? 1 : undefined);
  if (retryAfter !== undefined) res.setHeader('Retry-After', String(retryAfter));
  res.status(err.status).json(body);
}

export const notFoundHandler: RequestHandler = () => {
  throw new AppError('not_found', 'No such route.');
};

/** The one error middleware: public body from toAppError, details of 5xx in the log only. */
export const errorHandler: ErrorRequestHandler = (err: unknown, _req: Request, res: Response, next) => {
  if (res.headersSent) {
    next(err);
    return;
  }
  const appError = toAppError(err);
  if (appError.status >= 500) {
    requestLog(res).error({ err: appError.cause ?? appError, code: appError.code }, 'request failed');
  }
  sendError(res, appError);
};
