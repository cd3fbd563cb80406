import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Express, NextFunction, Request, RequestHandler, Response } from 'express';
import { newTraceId } from '@s2s/core';
import { newRequestId, type StoreUnavailableCode } from '@s2s/http-errors';
import { activeTraceId, requestLogFields, requestTraceId, serverRequestOf, type Logger } from '@s2s/telemetry';

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
  return (l.requestLogger ??= l.logger.child({ request_id: l.requestId, ...requestLogFields(res.req) }));
}

/**
 * The trace a session (or client secret) minted by this request belongs to: its server span's (the caller's
 * `traceparent` when it sent one), else a fresh one.
 */
export function traceIdOf(req: Request): string {
  return requestTraceId(req) ?? activeTraceId() ?? newTraceId();
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
function routeTemplate(baseUrl: string, path: string): string {
  return baseUrl !== '' && path === '/' ? baseUrl : baseUrl + path;
}

const ROUTE = Symbol('route');
type RoutedRequest = Request & { [ROUTE]?: { path: string } };

/**
 * Names each request's route for its server span and the HTTP duration metric (`/v1/voice/sessions/:id`, never
 * the path itself). Express sets `req.route` when it dispatches the request to a route, and only then is
 * `req.baseUrl` that route's mount path: an accessor on the app's request prototype (`app.request`) takes the
 * template at that moment and gives it to the request's server span (`serverRequestOf`, made by the server's
 * `tracedRequests`). (The express instrumentation did this with a wrapper and a span around every middleware;
 * an accessor defined on each request instead cost about a tenth of a create's CPU.)
 */
export function nameRoutes(app: Express): void {
  Object.defineProperty(app.request, 'route', {
    configurable: true,
    get(this: RoutedRequest) {
      return this[ROUTE];
    },
    set(this: RoutedRequest, route: { path: string }) {
      this[ROUTE] = route;
      nameRoute(this, routeTemplate(this.baseUrl, route.path));
    },
  });
}

/** Names the route of a request for its span and duration metric. */
function nameRoute(req: IncomingMessage, route: string): void {
  const traced = serverRequestOf(req);
  if (traced !== undefined) traced.route = route;
}

/**
 * What requestContext does for one request: its id (header and locals), no-store and its access line (with the
 * request's trace and span ids).
 */
function startRequest(
  logger: Logger,
  req: IncomingMessage & { originalUrl?: string },
  res: ServerResponse & { locals?: Record<string, unknown> },
): void {
  const started = process.hrtime.bigint();
  const requestId = newRequestId();
  // Every field from the start, in one order: a fast-properties object in place of express's empty
  // Object.create(null), a dictionary whose every store and load goes through V8's runtime. (Express keeps
  // the locals a request answered ahead of it already has.)
  const locals: RequestLocals = { requestId, logger, errorCode: undefined, requestLogger: undefined, storeUnavailable: undefined };
  res.locals = locals as unknown as Record<string, unknown>;
  res.setHeader('X-Request-Id', requestId);
  res.setHeader('Cache-Control', 'no-store');
  res.once('close', () => {
    const durationMs = Number(process.hrtime.bigint() - started) / 1e6;
    logger.info(
      {
        request_id: requestId,
        method: req.method,
        path: pathOf(req.originalUrl ?? req.url ?? ''),
        status: res.statusCode,
        duration_ms: Math.round(durationMs * 100) / 100,
        ...(locals.errorCode ? { code: locals.errorCode } : {}),
        ...(res.writableFinished ? {} : { aborted: true }),
        ...requestLogFields(req),
      },
      'request completed',
    );
  });
}
