import cors from 'cors';
import type { RequestHandler } from 'express';

/**
 * CORS for the public API (decisions.md, "Ephemeral client secrets"): only for the origins of
 * CORS_ALLOWED_ORIGINS (none when unset). Credentials travel as `Authorization`, never cookies, so
 * `Access-Control-Allow-Credentials` stays off. The operator API is never offered to browsers.
 */
export function publicCors(allowed: readonly string[] | '*' | undefined): RequestHandler {
  const origins = new Set(allowed === '*' ? [] : (allowed ?? []));
  const handler = cors({
    origin: (origin, callback) => callback(null, origin !== undefined && (allowed === '*' || origins.has(origin)) ? origin : false),
    methods: ['GET', 'POST'],
    allowedHeaders: ['Authorization', 'Content-Type', 'Idempotency-Key'],
    exposedHeaders: ['X-Request-Id', 'Idempotent-Replayed', 'Retry-After'],
    maxAge: 600,
  });
  if (allowed === undefined) return (_req, _res, next) => next();
  return (req, res, next) => (req.path.startsWith('/v1/') ? handler(req, res, next) : next());
}
