import express, { Router } from 'express';
import { PlaygroundSecretRequest } from '@s2s/contract';
import { CONSOLE_ASSETS_DIR, consoleBuilt, consoleCsp } from '@s2s/console';
import { errors } from '@s2s/core';
import type { AppContext } from '../context.js';
import { mintPlaygroundSecret } from '../domain/playground.js';
import { requireAdmin } from '../http/auth.js';
import { readJsonBody } from '../http/body.js';
import { traceIdOf } from '../http/request-context.js';

/**
 * The web console at /console: its built static files, and its backend under /console/api (admin token only:
 * the playground spends the wallet of the key the operator picks). The page holds the admin token in its tab.
 */
export function consoleRouter(ctx: AppContext): Router {
  const router = Router();
  const csp = consoleCsp(ctx.config.REALTIME_PUBLIC_URL);
  router.post('/api/playground/client_secrets', requireAdmin(ctx.config.ADMIN_TOKEN), async (req, res) => {
    const request = readJsonBody(req, res, PlaygroundSecretRequest);
    const traceId = traceIdOf(req);
    res.json(await mintPlaygroundSecret({ ctx, input: { request, traceId } }));
  });
  router.use((req, res, next) => {
    if (req.path.startsWith('/api/')) throw errors.notFound();
    if (!consoleBuilt()) throw errors.serviceUnavailable(undefined, 'The console is not built: run `npm run build` (or `npm start`).');
    // The page's assets are relative to /console/.
    if (req.originalUrl === req.baseUrl) {
      res.redirect(301, `${req.baseUrl}/`);
      return;
    }
    res.set({
      'Content-Security-Policy': csp,
      'X-Content-Type-Options': 'nosniff',
      'Referrer-Policy': 'no-referrer',
      'Cache-Control': 'no-store',
    });
    next();
  });
  router.use(express.static(CONSOLE_ASSETS_DIR, { index: 'index.html', redirect: true, dotfiles: 'ignore', etag: false }));
  return router;
}
