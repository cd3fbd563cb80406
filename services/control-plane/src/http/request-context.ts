import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { newRequestId, type StoreUnavailableCode } from '@s2s/http-errors';
import { routeNamer, type Logger } from '@s2s/telemetry';

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

/** The route template of a request express dispatched to `route` while `baseUrl` was its router's mount path. */
export function routeTemplate(baseUrl: string, path: string): string {
  return baseUrl !== '' && path === '/' ? baseUrl : baseUrl + path;
}

/**
 * Names the request's route for its server span and the HTTP duration metric (`/v1/voice/sessions/:id`, never
 * the path itself). Express sets `req.route` when it dispatches the request to a route, and only then is
 * `req.baseUrl` that route's mount path; the accessor put on `req` takes the template at that moment. (The
 * express instrumentation did this with a wrapper and a span around every middleware.)
 */
function nameRoute(req: Request): void {
  const name = routeNamer();
  if (name === undefined) return;
  let route = req.route as { path: string } | undefined;
  if (route !== undefined) name(routeTemplate(req.baseUrl, route.path));
  Object.defineProperty(req, 'route', {
    configurable: true,
    enumerable: true,
    get: () => route,
    set: (dispatched: { path: string }) => {
      route = dispatched;
      name(routeTemplate(req.baseUrl, dispatched.path));
    },
  });
}

/** What requestContext does for one request: its id (header and locals), no-store, its route and its access line. */
export function startRequest(logger: Logger, req: Request, res: Response): void {
  const started = process.hrtime.bigint();
  nameRoute(req);
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
