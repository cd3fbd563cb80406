import type { ErrorRequestHandler, Request, RequestHandler, Response } from 'express';
import { errors, type AppError } from '@s2s/core';
import { isStoreUnavailableError } from '@s2s/db';
import { httpErrorAnswer, isServerError, toAppError, type StoreUnavailableCode } from '@s2s/http-errors';
import { locals, requestLog } from './request-context.js';

/** Declares the code this route answers when its store does not respond (api-v1 §7: end has its own). */
export function storeUnavailableAnswers(code: StoreUnavailableCode): RequestHandler {
  return (_req, res, next) => {
    locals(res).storeUnavailable = code;
    next();
  };
}

export function sendError(res: Response, err: AppError): void {
  const l = locals(res);
  const answer = httpErrorAnswer(err, l.requestId);
  l.errorCode = err.code;
  res.set(answer.headers).status(answer.status).json(answer.body);
}

export const notFoundHandler: RequestHandler = () => {
  throw errors.notFound();
};

/** The one error middleware (@s2s/http-errors maps); the detail of a 5xx goes to the log only. */
export const errorHandler: ErrorRequestHandler = (err: unknown, _req: Request, res: Response, next) => {
  if (res.headersSent) {
    next(err);
    return;
  }
  const appError = toAppError(err, isStoreUnavailableError, locals(res).storeUnavailable);
  if (isServerError(appError)) {
    requestLog(res).error({ err: appError.cause ?? appError, code: appError.code }, 'request failed');
  }
  sendError(res, appError);
};
