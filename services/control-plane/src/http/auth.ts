import type { RequestHandler } from 'express';
import { bearerToken, constantTimeEqual, errors } from '@s2s/core';

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
