// The page's HTTP layer: same-origin fetches to the public API, the operator API and the console's backend.
// The admin token lives in this tab only (sessionStorage): never localStorage, never in the page source.
import type { AdminListPage, ErrorResponse } from '@s2s/contract';

const TOKEN_KEY = 's2s.console.admin_token';

export const adminToken = {
  get: (): string | null => sessionStorage.getItem(TOKEN_KEY),
  set: (token: string) => sessionStorage.setItem(TOKEN_KEY, token),
  clear: () => sessionStorage.removeItem(TOKEN_KEY),
};

/** An ErrorResponse of the gateway (or a network failure), with the URL that failed. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

/** The gateway's origin: the console is served by the control plane at /console/. */
const apiBase = new URL('../', document.baseURI);

export async function request<T>(method: string, path: string, opts: { body?: unknown; admin?: boolean } = {}): Promise<T> {
  const url = new URL(path.replace(/^\//, ''), apiBase);
  const headers: Record<string, string> = {};
  if (opts.body !== undefined) headers['Content-Type'] = 'application/json';
  if (opts.admin) headers.Authorization = `Bearer ${adminToken.get() ?? ''}`;
  let res: Response;
  try {
    res = await fetch(url, { method, headers, ...(opts.body !== undefined ? { body: JSON.stringify(opts.body) } : {}) });
  } catch (err) {
    throw new ApiError(0, 'network_error', `${method} ${url.pathname} failed: ${(err as Error).message}`);
  }
  const text = await res.text();
  let body: unknown = null;
  try {
    body = text ? JSON.parse(text) : null;
  } catch {
    // A proxy's HTML error page: the status below names the failure; a 2xx must be JSON.
    if (res.ok) throw new ApiError(res.status, 'invalid_response', `${method} ${url.pathname}: HTTP ${res.status} without a JSON body`);
  }
  if (!res.ok) {
    const error = (body as ErrorResponse | null)?.error;
    throw new ApiError(res.status, error?.code ?? 'http_error', error?.message ?? `${method} ${url.pathname}: HTTP ${res.status}`);
  }
  return body as T;
}

export const admin = {
  get: <T>(path: string) => request<T>('GET', `/admin/v1${path}`, { admin: true }),
  post: <T>(path: string, body?: unknown) => request<T>('POST', `/admin/v1${path}`, { admin: true, body }),
  put: <T>(path: string, body: unknown) => request<T>('PUT', `/admin/v1${path}`, { admin: true, body }),
};

/** A list endpoint's query string from filters (empty values left out) and the page cursor. */
export function listQuery(filters: Record<string, string | undefined>, after?: string | null): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(filters)) if (v !== undefined && v !== '') q.set(k, v);
  if (after) q.set('after', after);
  const s = q.toString();
  return s ? `?${s}` : '';
}

export type Page<T> = AdminListPage<T>;

export const formatTime = (unixSeconds: number) => new Date(unixSeconds * 1000).toISOString().replace('T', ' ').slice(0, 19);
