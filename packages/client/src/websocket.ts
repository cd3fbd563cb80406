import { CLIENT_SECRET_PREFIX, REALTIME_PROTOCOL, SVC_AUTH_SUBPROTOCOL_PREFIX } from '@s2s/contract';
import { S2SError } from './errors.js';

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

/** Opens a socket where there is no browser WebSocket (Node: `ws`, with the credential in `Authorization`). */
export type NodeSocketOpener = (opts: OpenSocketOptions) => SocketLike;
let nodeOpener: NodeSocketOpener | undefined;

/** Makes `openSocket` use `open` unless a WebSocket constructor is passed (the Node entry does, with `ws`). */
export function useNodeSockets(open: NodeSocketOpener): void {
  nodeOpener = open;
}

/**
 * Opens the svc-realtime-v1 socket. Browsers cannot set headers: an `ek_` secret goes in the
 * `svc-realtime-v1.auth.ek_…` subprotocol, and an API key is refused here, since it must stay server-side.
 * In Node (the package's Node entry) `ws` is used instead, with the credential in `Authorization`.
 */
export function openSocket(opts: OpenSocketOptions): SocketLike {
  const { url, credential } = opts;
  const Ctor = opts.WebSocket ?? (nodeOpener ? undefined : (globalThis as { WebSocket?: BrowserWebSocketConstructor }).WebSocket);
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
  if (!nodeOpener) throw new S2SError(`realtime ${url}: no WebSocket here (pass WebSocket)`, { url });
  return nodeOpener(opts);
}
