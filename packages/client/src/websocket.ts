import { CLIENT_SECRET_PREFIX, REALTIME_PROTOCOL, SVC_AUTH_SUBPROTOCOL_PREFIX } from '@s2s/contract';
import { parseErrorResponse, S2SApiError, S2SError } from './errors.js';

/** What the client uses of a WebSocket: the browser's, or the `ws` package's in Node (both have these). */
export interface SocketLike {
  readonly readyState: number;
  readonly protocol: string;
  send(data: string): void;
  close(code?: number, reason?: string): void;
  onopen: ((ev: unknown) => void) | null;
  onmessage: ((ev: { data: unknown }) => void) | null;
  onclose: ((ev: { code: number; reason: string }) => void) | null;
  onerror: ((ev: unknown) => void) | null;
}

/** A WebSocket constructor as browsers have it: no headers, so credentials travel in a subprotocol. */
export type BrowserWebSocketConstructor = new (url: string, protocols?: string | string[]) => SocketLike;

export interface OpenSocketOptions {
  url: string;
  /** `vr_sk_…` API key or `ek_…` client secret. */
  credential: string;
  /** A WebSocket constructor to use instead of the environment's (tests, other runtimes). */
  WebSocket?: BrowserWebSocketConstructor | undefined;
  /** Called when the gateway refuses the upgrade with an HTTP answer (only `ws` in Node can read it). */
  onRefused: (err: S2SError) => void;
}

const isNode = typeof (globalThis as { process?: { versions?: { node?: string } } }).process?.versions?.node === 'string';

/**
 * Opens the svc-realtime-v1 socket. Node (or any `ws`): the credential goes in `Authorization` and a
 * refused upgrade is read as its ErrorResponse. Browsers cannot set headers: an `ek_` secret goes in the
 * `svc-realtime-v1.auth.ek_…` subprotocol, and an API key is refused here, since it must stay server-side.
 */
export async function openSocket(opts: OpenSocketOptions): Promise<SocketLike> {
  const { url, credential } = opts;
  const Ctor = opts.WebSocket ?? (isNode ? undefined : (globalThis as { WebSocket?: BrowserWebSocketConstructor }).WebSocket);
  if (Ctor) {
    if (!credential.startsWith(CLIENT_SECRET_PREFIX)) {
      throw new S2SError(
        `realtime ${url}: a browser WebSocket carries only an ek_ client secret (mint one server-side; API keys stay there)`,
        {
          url,
        },
      );
    }
    return new Ctor(url, [REALTIME_PROTOCOL, `${SVC_AUTH_SUBPROTOCOL_PREFIX}${credential}`]);
  }
  const { WebSocket: WS } = await import('ws');
  const socket = new WS(url, REALTIME_PROTOCOL, { headers: { Authorization: `Bearer ${credential}` } });
  socket.on('unexpected-response', (_req, res) => {
    let text = '';
    res.setEncoding('utf8');
    res.on('data', (chunk: string) => (text += chunk));
    res.on('end', () => {
      let body: unknown = null;
      try {
        body = JSON.parse(text);
      } catch {
        // not JSON: the status alone
      }
      const retry = res.headers['retry-after'];
      opts.onRefused(
        new S2SApiError({
          url,
          method: 'GET',
          status: res.statusCode ?? 0,
          body: parseErrorResponse(body),
          retryAfter: typeof retry === 'string' && /^\d+$/.test(retry) ? Number(retry) : undefined,
        }),
      );
      // Aborts the handshake: ws then emits error and close, which the connection reads after the refusal.
      socket.terminate();
    });
  });
  return socket as unknown as SocketLike;
}
