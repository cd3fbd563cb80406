import type { IncomingMessage, ServerResponse } from 'node:http';
import { Router, type RequestHandler } from 'express';
import type { AppContext } from '../context.js';
import type { CatalogBody } from '../domain/catalog-cache.js';
import { nameRoute, startRequest } from '../http/request-context.js';

function send(req: IncomingMessage, res: ServerResponse, { body, etag }: CatalogBody): void {
  res.setHeader('ETag', etag);
  if (req.headers['if-none-match'] === etag) {
    res.statusCode = 304;
    res.end();
    return;
  }
  res.setHeader('Content-Type', 'application/json; charset=utf-8');
  res.setHeader('Content-Length', body.length);
  res.end(body);
}

/** GET /v1/models (no authentication); mounted at /v1/models. The body is the cache's, serialized once. */
export function modelsRouter(ctx: AppContext): Router {
  const router = Router();
  router.get('/', async (req, res) => {
    send(req, res, await ctx.catalog.get());
  });
  return router;
}

/**
 * GET /v1/models ahead of the middleware chain, when the catalog is in memory and the request needs nothing
 * else the chain does (no Origin: CORS stays with publicCors): the same request id, headers and access line
 * (startRequest), the same body. Anything else, the first load and a failed one included, goes on to the chain.
 */
export function modelsFastPath(ctx: AppContext): RequestHandler {
  return (req, res, next) => {
    const held = ctx.catalog.peek();
    if (held === undefined || req.headers.origin !== undefined) {
      next();
      return;
    }
    startRequest(ctx.log, req, res);
    send(req, res, held);
  };
}

/**
 * The most common catalog request, `GET /v1/models` exactly (a query string aside) with the catalog in memory and
 * no Origin, answered before express sees it (server.ts): what modelsFastPath does, without express's request
 * setup and router (a tenth or so of the request's CPU). True when it answered; anything else, the spellings
 * express also routes here (`/v1/models/`, `/V1/Models`, HEAD) included, goes to express.
 */
export function modelsAheadOfExpress(ctx: AppContext): (req: IncomingMessage, res: ServerResponse) => boolean {
  return (req, res) => {
    const url = req.url;
    if (req.method !== 'GET' || url === undefined || !(url === '/v1/models' || url.startsWith('/v1/models?'))) return false;
    const held = ctx.catalog.peek();
    if (held === undefined || req.headers.origin !== undefined) return false;
    startRequest(ctx.log, req, res);
    nameRoute(req, '/v1/models');
    send(req, res, held);
    return true;
  };
}
