import { Router, type Request, type RequestHandler, type Response } from 'express';
import type { AppContext } from '../context.js';
import type { CatalogBody } from '../domain/catalog-cache.js';
import { startRequest } from '../http/request-context.js';

function send(req: Request, res: Response, { body, etag }: CatalogBody): void {
  res.setHeader('ETag', etag);
  if (req.headers['if-none-match'] === etag) {
    res.status(304).end();
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
