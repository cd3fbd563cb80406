import { ErrorResponse } from '@s2s/contract';

/** Every failure of the client: it names the URL that failed (and the method, for HTTP). */
export class S2SError extends Error {
  override name = 'S2SError';
  readonly url: string;
  readonly method: string | undefined;

  constructor(message: string, opts: { url: string; method?: string | undefined; cause?: unknown }) {
    super(message, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.url = opts.url;
    this.method = opts.method;
  }
}

/**
 * The gateway answered with an error status: `body` is its ErrorResponse (null when the answer was not
 * one, e.g. a proxy's HTML page), `code` its `error.code` (`http_<status>` without one).
 */
export class S2SApiError extends S2SError {
  override name = 'S2SApiError';
  readonly status: number;
  readonly body: ErrorResponse | null;
  readonly code: string;
  readonly type: string | undefined;
  readonly requestId: string | undefined;
  /** Seconds, from `Retry-After` (429, 503). */
  readonly retryAfter: number | undefined;

  constructor(opts: { url: string; method: string; status: number; body: ErrorResponse | null; retryAfter?: number | undefined }) {
    const e = opts.body?.error;
    const what = e ? `${e.code}: ${e.message} (request ${e.request_id})` : `HTTP ${opts.status}`;
    super(`${opts.method} ${opts.url} failed with ${opts.status} ${what}`, { url: opts.url, method: opts.method });
    this.status = opts.status;
    this.body = opts.body;
    this.code = e?.code ?? `http_${opts.status}`;
    this.type = e?.type;
    this.requestId = e?.request_id;
    this.retryAfter = opts.retryAfter;
  }
}

/** Nothing answered: refused connection, unknown host, TLS failure, timeout. */
export class S2SConnectionError extends S2SError {
  override name = 'S2SConnectionError';

  constructor(opts: { url: string; method: string; cause: unknown }) {
    super(`${opts.method} ${opts.url} failed: ${describeCause(opts.cause)}`, opts);
  }
}

/** The realtime socket closed before the client was done with it (close codes: docs/architecture.md). */
export class S2SRealtimeClosedError extends S2SError {
  override name = 'S2SRealtimeClosedError';
  readonly code: number;
  readonly reason: string;

  constructor(opts: { url: string; code: number; reason: string }) {
    super(`realtime socket ${opts.url} closed with ${opts.code}${opts.reason ? ` (${opts.reason})` : ''}`, { url: opts.url });
    this.code = opts.code;
    this.reason = opts.reason;
  }
}

/** An ErrorResponse when `body` is one, else null. */
export function parseErrorResponse(body: unknown): ErrorResponse | null {
  const parsed = ErrorResponse.safeParse(body);
  return parsed.success ? parsed.data : null;
}

/** fetch's "fetch failed" hides the reason in `cause` (ECONNREFUSED, ENOTFOUND …): name it. */
export function describeCause(err: unknown): string {
  const parts: string[] = [];
  for (let e: unknown = err, depth = 0; e instanceof Error && depth < 4; e = e.cause, depth++) {
    const code = (e as { code?: unknown }).code;
    parts.push(typeof code === 'string' && !e.message.includes(code) ? `${e.message} (${code})` : e.message);
  }
  return parts.length > 0 ? parts.join(': ') : String(err);
}

/** Retry-After in seconds, when the header holds a number. */
export function retryAfterSeconds(value: string | null): number | undefined {
  if (value === null || !/^\d+$/.test(value.trim())) return undefined;
  return Number(value.trim());
}
