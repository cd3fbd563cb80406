import express, { type Request, type RequestHandler, type Response } from 'express';
import type { z } from '@s2s/core';
import { errors } from '@s2s/core';

const BODY_ERROR = Symbol('bodyError');
type WithBodyError = Request & { [BODY_ERROR]?: { err: unknown; limitBytes: number } };

/**
 * express.json whose failures are recorded instead of answered, so that a route checks its credentials
 * before it complains about the body (api-v1: auth, then body); readJsonBody reports them.
 */
export function deferredJsonBody(limitBytes: number): RequestHandler {
  const parse = express.json({ limit: limitBytes, strict: true, type: 'application/json' });
  return (req, res, next) => {
    parse(req, res, (err?: unknown) => {
      if (err) (req as WithBodyError)[BODY_ERROR] = { err, limitBytes };
      next();
    });
  };
}

function hasBody(req: Request): boolean {
  const length = req.headers['content-length'];
  return req.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0');
}

function bodyErrorMessage(err: unknown, limitBytes: number): string {
  const type = (err as { type?: unknown }).type;
  if (type === 'entity.too.large') return `The request body is larger than ${limitBytes} bytes.`;
  if (type === 'entity.parse.failed') return 'The request body is not valid JSON.';
  if (type === 'encoding.unsupported' || type === 'charset.unsupported') return 'The request body encoding is not supported.';
  return 'The request body could not be read.';
}

/** Short, value-free description of what is wrong (field paths and zod's reason). */
export function describeIssues(issues: readonly z.core.$ZodIssue[]): string {
  const parts = issues.slice(0, 5).map((i) => `${i.path.length ? i.path.map(String).join('.') : 'body'}: ${i.message}`);
  return `Invalid request body (${parts.join('; ')}).`;
}

export interface ReadBodyOptions {
  /** No body at all is read as `{}` (POST .../end). */
  optional?: boolean;
}

/**
 * The JSON body validated by `schema`. Every way it can be wrong (no or wrong Content-Type, malformed JSON,
 * over the size limit, wrong shape, unknown field) is 400 invalid_request, never body-parser's 413 or 415.
 */
export function readJsonBody<S extends z.ZodType>(req: Request, _res: Response, schema: S, opts: ReadBodyOptions = {}): z.infer<S> {
  const failure = (req as WithBodyError)[BODY_ERROR];
  if (failure !== undefined) throw errors.invalidRequest(bodyErrorMessage(failure.err, failure.limitBytes));
  let body: unknown;
  if (!hasBody(req)) {
    if (!opts.optional) throw errors.invalidRequest('A JSON request body is required.');
    body = {};
  } else {
    if (!req.is('application/json')) throw errors.invalidRequest('Content-Type must be application/json.');
    body = req.body;
  }
  const parsed = schema.safeParse(body);
  if (!parsed.success) throw errors.invalidRequest(describeIssues(parsed.error.issues));
  return parsed.data;
}
