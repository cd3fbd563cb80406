import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { newRequestId, type StoreUnavailableCode } from '@s2s/http-errors';
import type { Logger } from '@s2s/telemetry';

/** Per-request state kept in `res.locals`. */
export interface RequestLocals {
  requestId: string;
  /** Error code of the answer, for the access log line. */
  errorCode?: string;
  logger: Logger;
  requestLogger?: Logger;
  /** Set by a route whose store outage has its own code (storeUnavailableAnswers). */
  storeUnavailable?: StoreUnavailableCode;
}

export function locals(res: Response): RequestLocals {
  return res.locals as RequestLocals;
}

/** A logger whose every line carries the request id; made on first use (most requests only log the access line). */
export function requestLog(res: Response): Logger {
  const l = locals(res);
  return (l.requestLogger ??= l.logger.child({ request_id: l.requestId }));
}

/** Path without the query string: nothing a client put in a query reaches the log. */
function pathOf(url: string): string {
  const q = url.indexOf('?');
  return q === -1 ? url : url.slice(0, q);
}

/**
 * A fresh request id on every response (header and error body) and one access line per request,
 * both carrying it. Responses hold balances and one-time secrets, so nothing is cacheable.
 */
export function requestContext(logger: Logger): RequestHandler {
  return (req: Request, res: Response, next: NextFunction) => {
    startRequest(logger, req, res);
    next();
  };
}

/** What requestContext does for one request: its id (header and locals), no-store, and its access line. */
export function startRequest(logger: Logger, req: Request, res: Response): void {
  const started = process.hrtime.bigint();
  const requestId = newRequestId();
  res.locals.requestId = requestId;
  res.locals.logger = logger;
  res.setHeader('X-Request-Id', requestId);
  res.setHeader('Cache-Control', 'no-store');
  res.once('close', () => {
    const durationMs = Number(process.hrtime.bigint() - started) / 1e6;
    logger.info(
      {
        request_id: requestId,
        method: req.method,
        path: pathOf(req.originalUrl),
        status: res.statusCode,
        duration_ms: Math.round(durationMs * 100) / 100,
        ...(res.locals.errorCode ? { code: res.locals.errorCode } : {}),
        ...(res.writableFinished ? {} : { aborted: true }),
      },
      'request completed',
    );
  });
}
