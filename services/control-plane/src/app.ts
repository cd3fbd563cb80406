import express, { type Express } from 'express';
import { createContext, type AppDeps } from './context.js';
import { refuseOptions } from './http/auth.js';
import { publicCors } from './http/cors.js';
import { deferredJsonBody } from './http/body.js';
import { errorHandler, notFoundHandler } from './http/errors.js';
import { nameRoutes, requestContext } from './http/request-context.js';
import { adminRouter } from './routes/admin.js';
import { consoleRouter } from './routes/console.js';
import { realtimeClientSecretsRouter } from './routes/client-secrets.js';
import { healthRouter } from './routes/health.js';
import { modelsRouter } from './routes/models.js';
import { sessionsRouter } from './routes/sessions.js';

export type { AppDeps } from './context.js';

/** The control plane's HTTP application; main.ts listens with it, tests listen on port 0. */
export function buildApp(deps: AppDeps): Express {
  const ctx = createContext(deps);
  const app = express();
  app.disable('x-powered-by');
  // Every answer is per-caller and uncacheable; hashing each body for an ETag would be wasted work.
  app.set('etag', false);
  nameRoutes(app);

  // Scrapes are neither logged nor traced (the HTTP instrumentation ignores /metrics).
  app.get('/metrics', (req, res) => ctx.metrics.handler(req, res));
  app.use(requestContext(ctx.log));
  // Before refuseOptions: an allowed origin's preflight is answered here; any other OPTIONS stays 404.
  app.use(publicCors(ctx.config.CORS_ALLOWED_ORIGINS));
  app.use(refuseOptions(ctx.config.ADMIN_TOKEN));
  app.use(deferredJsonBody(ctx.config.HTTP_BODY_LIMIT_BYTES));

  app.use('/v1/voice/sessions', sessionsRouter(ctx));
  app.use('/v1/realtime', realtimeClientSecretsRouter(ctx));
  app.use('/v1/models', modelsRouter(ctx));
  app.use('/admin/v1', adminRouter(ctx));
  app.use('/console', consoleRouter(ctx));
  app.use(healthRouter(ctx));

  app.use(notFoundHandler);
  app.use(errorHandler);
  return app;
}
