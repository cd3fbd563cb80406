import { Router } from 'express';
import type { AppContext } from '../context.js';
import { listModels } from '../domain/catalog.js';

/** GET /v1/models (no authentication); mounted at /v1/models. */
export function modelsRouter(ctx: AppContext): Router {
  const router = Router();
  router.get('/', async (_req, res) => {
    res.json(await listModels({ ctx }));
  });
  return router;
}
