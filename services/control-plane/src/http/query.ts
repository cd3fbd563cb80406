import type { Request } from 'express';
import type { z } from '@s2s/core';
import { errors } from '@s2s/core';

/**
 * The query string validated by `schema` (a strict object of string fields): an unknown or repeated
 * parameter, or a bad value, is 400 invalid_request naming the parameter, never an unfiltered answer.
 */
export function readQuery<S extends z.ZodType>(req: Request, schema: S): z.infer<S> {
  const parsed = schema.safeParse(req.query);
  if (parsed.success) return parsed.data;
  const parts = parsed.error.issues.slice(0, 5).map((i) => {
    const keys = i.code === 'unrecognized_keys' ? i.keys.join(', ') : i.path.map(String).join('.');
    return i.code === 'unrecognized_keys' ? `unknown parameter ${keys}` : `${keys || 'query'}: ${i.message}`;
  });
  throw errors.invalidRequest(`Invalid query (${parts.join('; ')}).`);
}
