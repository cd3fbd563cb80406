import type { RequestHandler } from 'express';
import { AppError, bearerToken, constantTimeEqual } from '@s2s/core';

/** Operator API guard: `Authorization: Bearer $ADMIN_TOKEN`, compared in constant time. */
export function requireAdmin(adminToken: string): RequestHandler {
  return (req, _res, next) => {
    const token = bearerToken(req.headers.authorization);
    if (token === null || !constantTimeEqual(token, adminToken)) {
      throw new AppError('invalid_admin_token', 'The admin token is missing or invalid.');
    }
    next();
  };
}
