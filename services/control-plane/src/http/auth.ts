import type { RequestHandler } from 'express';
import { AppError, bearerToken, constantTimeEqual, errors } from '@s2s/core';

/** Operator API guard: `Authorization: Bearer $ADMIN_TOKEN`, compared in constant time. */
export function requireAdmin(adminToken: string): RequestHandler {
  return (req, _res, next) => {
    const token = bearerToken(req.headers.authorization);
    if (token === null || !constantTimeEqual(token, adminToken)) {
      throw errors.invalidAdminToken();
    }
    next();
  };
}

/**
 * OPTIONS answers 404 not_found (unless publicCors answered an allowed preflight first): express would otherwise
 * answer 200 text/plain with Allow. Operator paths check the admin token first, like any other request there.
 */
export function refuseOptions(adminToken: string): RequestHandler {
  const admin = requireAdmin(adminToken);
  const notFound = () => {
    throw new AppError('not_found', 'No such route.');
  };
  return (req, res, next) => {
    if (req.method !== 'OPTIONS') {
      next();
      return;
    }
    if (/^\/admin\/v1(\/|$)/.test(req.path)) admin(req, res, notFound);
    else notFound();
  };
}
