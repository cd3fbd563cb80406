import type { IncomingMessage, ServerResponse } from 'node:http';
import { Router } from 'express';
import type { AppContext } from '../context.js';
import type { CatalogBody } from '../domain/catalog-cache.js';

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
