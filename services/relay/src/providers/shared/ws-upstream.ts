import WebSocket from 'ws';
import { UpstreamError } from './errors.js';
import type { UpstreamEvent } from './types.js';

/** Largest upstream event accepted; a provider's audio delta is far smaller. */
const MAX_UPSTREAM_EVENT_BYTES = 32 * 1024 * 1024;

/**
 * Opens a WebSocket to an upstream and resolves once it is open. Every failure becomes an UpstreamError
 * whose message names only the provider: ws's own errors carry the host and port, a refused handshake's
 * body may echo the key, so neither is passed on.
 */
export function openUpstreamSocket(opts: {
  provider: string;
  url: string;
  headers: Record<string, string>;
  signal: AbortSignal;
}): Promise<WebSocket> {
  return new Promise((resolve, reject) => {
    if (opts.signal.aborted) return reject(new UpstreamError(opts.provider, 'aborted'));
    const ws = new WebSocket(opts.url, {
      headers: opts.headers,
      perMessageDeflate: false,
      maxPayload: MAX_UPSTREAM_EVENT_BYTES,
      followRedirects: false,
    });
    let settled = false;
    const fail = (err: UpstreamError) => {
      if (settled) return;
      settled = true;
      cleanup();
      ws.on('error', () => {}); // late errors of an abandoned socket are expected and meaningless
      ws.terminate();
      reject(err);
    };
    const onAbort = () => fail(new UpstreamError(opts.provider, 'aborted'));
    const cleanup = () => {
      opts.signal.removeEventListener('abort', onAbort);
      ws.off('open', onOpen);
      ws.off('error', onError);
      ws.off('unexpected-response', onUnexpected);
    };
    const onOpen = () => {
      if (settled) return;
      settled = true;
      cleanup();
      resolve(ws);
    };
    const onError = (err: Error & { code?: string }) => {
      fail(new UpstreamError(opts.provider, 'unavailable', { networkCode: typeof err.code === 'string' ? err.code : undefined }));
    };
    const onUnexpected = (req: { destroy(): void }, res: { statusCode?: number; resume(): void }) => {
      res.resume();
      req.destroy();
      fail(handshakeError(opts.provider, res.statusCode ?? 0));
    };
    opts.signal.addEventListener('abort', onAbort, { once: true });
    ws.on('open', onOpen);
    ws.on('error', onError);
    ws.on('unexpected-response', onUnexpected);
  });
}

/** A refused handshake: 401/403 are credentials, other 4xx the request itself (not retried), else unavailable. */
export function handshakeError(provider: string, status: number): UpstreamError {
  if (status === 401 || status === 403) return new UpstreamError(provider, 'unauthorized', { status });
  if (status >= 400 && status < 500 && status !== 408 && status !== 429) return new UpstreamError(provider, 'rejected', { status });
  return new UpstreamError(provider, 'unavailable', { status });
}

/** Parses an upstream frame (text or binary JSON); null when it is not a JSON object. */
export function parseUpstreamJson(data: WebSocket.RawData): Record<string, unknown> | null {
  try {
    const text = Buffer.isBuffer(data)
      ? data.toString('utf8')
      : Array.isArray(data)
        ? Buffer.concat(data).toString('utf8')
        : Buffer.from(data).toString('utf8');
    const value: unknown = JSON.parse(text);
    return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}

/** Upstream error codes are copied into our messages only when they look like codes, never free text. */
export function safeCode(code: unknown): string {
  return typeof code === 'string' && /^[A-Za-z0-9_.-]{1,64}$/.test(code) ? code : 'unknown';
}

type SetupWaiter = { resolve: () => void; reject: (err: UpstreamError) => void };

/**
 * What every WebSocket upstream connection shares: the set-up handshake (send the provider's setup message,
 * wait for its confirmation, fail on abort or close), guarded send/emit, and a bounded close. A protocol
 * subclass parses messages, calls `configured?.resolve()` on the provider's confirmation, and handles close.
 */
export abstract class WsUpstreamConnection {
  protected phase: 'configuring' | 'open' | 'closed' = 'configuring';
  protected closingByUs = false;
  protected configured: SetupWaiter | null = null;
  private readonly onData = (data: WebSocket.RawData) => this.onFrame(data);
  private readonly onSocketClose = (code: number, reason: Buffer) => this.onClose(code, reason);

  constructor(
    protected readonly provider: string,
    protected ws: WebSocket,
    private readonly onEvent: (event: UpstreamEvent) => void,
  ) {
    this.listen(ws);
  }

  private listen(ws: WebSocket): void {
    ws.on('message', this.onData);
    ws.on('close', this.onSocketClose);
    ws.on('error', () => {}); // a socket error is always followed by 'close', handled there
  }

  /**
   * Moves the connection to a new socket (a provider's session resumption): from now on messages and the
   * close come from `next`; the previous socket is closed without being heard.
   */
  protected replaceSocket(next: WebSocket): void {
    const previous = this.ws;
    previous.off('message', this.onData);
    previous.off('close', this.onSocketClose);
    if (previous.readyState === previous.OPEN || previous.readyState === previous.CONNECTING) previous.close(1000);
    this.ws = next;
    this.listen(next);
  }

  /** One upstream frame; a protocol may read its hot event from the bytes and parse the rest. */
  protected onFrame(data: WebSocket.RawData): void {
    this.onMessage(parseUpstreamJson(data));
  }

  protected abstract onMessage(msg: Record<string, unknown> | null): void;
  protected abstract onClose(code: number, reason: Buffer): void;

  /** Sends `setup` and resolves once the subclass sees the provider confirm it. */
  protected awaitSetup(setup: Record<string, unknown>, signal: AbortSignal): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const onAbort = () => fail(new UpstreamError(this.provider, 'aborted'));
      const fail = (err: UpstreamError) => {
        signal.removeEventListener('abort', onAbort);
        this.configured = null;
        this.phase = 'closed';
        this.ws.terminate();
        reject(err);
      };
      this.configured = {
        resolve: () => {
          signal.removeEventListener('abort', onAbort);
          this.configured = null;
          this.phase = 'open';
          resolve();
        },
        reject: fail,
      };
      if (signal.aborted) return onAbort();
      signal.addEventListener('abort', onAbort, { once: true });
      this.send(setup);
    });
  }

  close(): Promise<void> {
    if (this.phase === 'closed') return Promise.resolve();
    this.closingByUs = true;
    return new Promise<void>((resolve) => {
      this.ws.once('close', () => resolve());
      // A peer that does not answer the close frame is cut off.
      const timer = setTimeout(() => this.ws.terminate(), 2000);
      timer.unref();
      this.ws.close(1000);
    });
  }

  protected send(message: Record<string, unknown>): void {
    if (this.phase === 'closed' || this.ws.readyState !== this.ws.OPEN) return;
    this.ws.send(JSON.stringify(message));
  }

  protected emit(event: UpstreamEvent): void {
    if (this.phase === 'open') this.onEvent(event);
  }
}

export type { WebSocket };
