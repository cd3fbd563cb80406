import { Router } from 'express';
import type { AppContext } from '../context.js';

/** GET /v1/models (no authentication); mounted at /v1/models. The body is the cache's, serialized once. */
export function modelsRouter(ctx: AppContext): Router {
  const router = Router();
  router.get('/', async (req, res) => {
    const { body, etag } = await ctx.catalog.get();
    res.setHeader('ETag', etag);
    if (req.headers['if-none-match'] === etag) {
      res.status(304).end();
      return;
    }
    res.setHeader('Content-Type', 'application/json; charset=utf-8');
    res.setHeader('Content-Length', body.length);
    res.end(body);
  });
  return router;
}
