import { Router } from 'express';
import { errors } from '@s2s/core';
import type { AppContext } from '../context.js';

const PROBE_TIMEOUT_MS = 1000;

function withTimeout<T>(p: Promise<T>, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not answer within ${PROBE_TIMEOUT_MS} ms`)), PROBE_TIMEOUT_MS);
  });
  return Promise.race([p, timeout]).finally(() => clearTimeout(timer));
}

/** /healthz: the process is up. /readyz: the database answers `SELECT 1` and the bus is connected. */
export function healthRouter(ctx: AppContext): Router {
  const router = Router();
  router.get('/healthz', (_req, res) => {
    res.json({ status: 'ok' });
  });
  router.get('/readyz', async (_req, res) => {
    try {
      if (ctx.bus.nc.isClosed() || ctx.bus.nc.isDraining()) throw new Error('bus connection closed');
      await Promise.all([withTimeout(ctx.db.pool.query('SELECT 1'), 'database'), withTimeout(ctx.bus.nc.flush(), 'bus')]);
    } catch (err) {
      throw errors.serviceUnavailable(err, 'The service is not ready.');
    }
    res.json({ status: 'ok' });
  });
  return router;
}
