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

// The Content-Types a plain read decodes exactly as express.json does (UTF-8, the default charset of JSON).
const PLAIN_JSON_TYPES = new Set(['application/json', 'application/json; charset=utf-8']);

/**
 * Whether `receivePlainJsonBody` reads this request's body exactly as deferredJsonBody would: a JSON
 * Content-Type in UTF-8, a Content-Length within the limit (not 0), no Content-Encoding or chunked body.
 * Anything else goes through express.json.
 */
export function isPlainJsonBody(req: Request, limitBytes: number): boolean {
  const { headers } = req;
  const type = headers['content-type'];
  const length = headers['content-length'];
  if (type === undefined || length === undefined || !PLAIN_JSON_TYPES.has(type.toLowerCase())) return false;
  if (headers['content-encoding'] !== undefined || headers['transfer-encoding'] !== undefined) return false;
  const n = Number(length);
  return Number.isInteger(n) && n > 0 && n <= limitBytes;
}

/** body-parser's strict mode: the first character that is not JSON whitespace opens an object or an array. */
function opensObjectOrArray(text: string): boolean {
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d) continue;
    return c === 0x7b || c === 0x5b; // { or [
  }
  return false;
}

/**
 * Reads the body of a request isPlainJsonBody accepted and records what deferredJsonBody would have (the parsed
 * value in `req.body`, or the failure readJsonBody reports: not JSON, not an object or array, aborted).
 */
export function receivePlainJsonBody(req: Request, limitBytes: number): Promise<void> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let settled = false;
    const settle = (err: { type: string } | undefined, body?: unknown) => {
      if (settled) return;
      settled = true;
      if (err !== undefined) (req as WithBodyError)[BODY_ERROR] = { err, limitBytes };
      else req.body = body;
      resolve();
    };
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.once('error', () => settle({ type: 'request.aborted' }));
    req.once('close', () => settle({ type: 'request.aborted' }));
    req.once('end', () => {
      // As raw-body decodes it: UTF-8, a byte order mark dropped.
      let text = (chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks)).toString('utf8');
      if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
      if (text.length === 0) return settle(undefined, {});
      if (!opensObjectOrArray(text)) return settle({ type: 'entity.parse.failed' });
      let body: unknown;
      try {
        body = JSON.parse(text);
      } catch {
        return settle({ type: 'entity.parse.failed' });
      }
      settle(undefined, body);
    });
  });
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
