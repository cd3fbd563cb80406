import http, { type ClientRequest, type IncomingMessage, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { finished, Readable, Transform, type TransformCallback } from 'node:stream';
import { PROXY_IDLE_MS } from '@s2s/http-errors';
import type { Logger } from '@s2s/telemetry';
import type { ProxyServer, ServerOptions } from 'http-proxy-3';

/**
 * A body up to this size is kept while it streams to the backend, so that the one retry can send it again: four
 * times the control plane's default body limit (HTTP_BODY_LIMIT_BYTES), which refuses larger ones anyway.
 */
const REPLAYABLE_BODY_BYTES = 256 * 1024;
/** What a write to, or a read from, a connection the backend has just closed fails with. */
const CLOSED_UNDER_US = new Set(['ECONNRESET', 'EPIPE']);
const FORWARDED = ['x-forwarded-for', 'x-forwarded-port', 'x-forwarded-proto', 'x-forwarded-host'] as const;

/**
 * The edge's pool of backend connections. An idle connection leaves it after PROXY_IDLE_MS, under our servers'
 * keepAliveTimeout, and under any backend's own `Keep-Alive: timeout` (Node's agent keeps one second less).
 */
export function backendAgent(): http.Agent {
  return new http.Agent({ keepAlive: true, maxSockets: 256, timeout: PROXY_IDLE_MS });
}

/** One try at forwarding a request. */
interface Attempt {
  proxyReq?: ClientRequest;
  /** The connection's byte count when this request got it: any byte more is the start of an answer. */
  bytesReadBefore?: number;
  failed?: boolean;
}

export type ForwardFailed = (err: Error, res: ServerResponse, target: string) => void;

/**
 * Forwards plain HTTP requests through `proxy`, sending a request once more, on a fresh connection, when the
 * pooled connection it went out on turned out to be closed by the backend: the keep-alive race, where the backend's
 * idle timer fires as the edge reuses the connection. Other failures go to `failed`.
 */
export function forwarder(proxy: ProxyServer, logger: Logger, failed: ForwardFailed) {
  const attempts = new WeakMap<IncomingMessage, Attempt>();
  proxy.on('proxyReq', (proxyReq, req, _res, _options, socket: Socket) => {
    const attempt = attempts.get(req);
    if (attempt) Object.assign(attempt, { proxyReq, bytesReadBefore: socket.bytesRead });
  });
  // http-proxy-3 may report a request twice (its own error and the client's): the first report decides.
  const attempt = (req: IncomingMessage, res: ServerResponse, options: ServerOptions, onError: (err: Error, a: Attempt) => void) => {
    const a: Attempt = {};
    attempts.set(req, a);
    proxy.web(req, res, options, (err) => {
      if (a.failed) return;
      a.failed = true;
      onError(err, a);
    });
  };

  return (req: IncomingMessage, res: ServerResponse, target: string): void => {
    // http-proxy-3 appends to the X-Forwarded-* headers it finds: a second attempt starts from the client's.
    const forwarded = FORWARDED.map((name) => req.headers[name]);
    const body = hasBody(req) ? req.pipe(new BodyRecord(REPLAYABLE_BODY_BYTES)) : undefined;
    attempt(req, res, { target, ...(body ? { buffer: body } : {}) }, (err, first) => {
      if (!closedUnderUs(err, first, req, res)) return failed(err, res, target);
      void replayable(req, body).then((bytes) => {
        if (bytes === undefined || req.socket.destroyed) return failed(err, res, target);
        logger.info({ target, code: (err as NodeJS.ErrnoException).code }, 'backend closed a reused connection; sending the request again');
        FORWARDED.forEach((name, i) => {
          if (forwarded[i] === undefined) delete req.headers[name];
          else req.headers[name] = forwarded[i];
        });
        // A connection of its own (`agent: false`), never another pooled one that may be as stale.
        const again = Readable.from(bytes.length > 0 ? [bytes] : []);
        attempt(req, res, { target, agent: false, buffer: again }, (retryErr) => failed(retryErr, res, target));
      });
    });
  };
}

/**
 * Whether the request failed on a reused connection that the backend had closed, before any byte of an answer:
 * then the backend never read it, and sending it again cannot make it happen twice, even a POST. Our backends
 * (Node servers) close a kept-alive connection without answering when its idle timer fires or when they drain
 * (closeIdleConnections), both only with no request in progress on it; one dying mid-request refuses the fresh
 * connection the retry needs, so the retry never reaches it. An answer begun (one byte read) is never retried.
 */
function closedUnderUs(err: Error, attempt: Attempt, req: IncomingMessage, res: ServerResponse): boolean {
  const { proxyReq, bytesReadBefore } = attempt;
  if (!proxyReq?.reusedSocket || bytesReadBefore === undefined || res.headersSent || req.socket.destroyed) return false;
  if (!CLOSED_UNDER_US.has((err as NodeJS.ErrnoException).code ?? '')) return false;
  return proxyReq.socket?.bytesRead === bytesReadBefore;
}

function hasBody(req: IncomingMessage): boolean {
  const length = req.headers['content-length'];
  return req.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0');
}

/** The whole body once the client has sent it (empty without one); undefined if too large to keep or cut off. */
function replayable(req: IncomingMessage, body: BodyRecord | undefined): Promise<Buffer | undefined> {
  if (!body) return Promise.resolve(Buffer.alloc(0));
  // The failed attempt stopped reading the record; what it keeps is all a retry needs, so the rest is let through.
  body.resume();
  if (body.writableFinished) return Promise.resolve(body.kept());
  return new Promise((resolve) => {
    finished(body, { readable: false }, (err) => resolve(err ? undefined : body.kept()));
    req.once('close', () => req.complete || resolve(undefined));
  });
}

/** A pass-through that keeps a copy of what passes, up to `limit` bytes. */
class BodyRecord extends Transform {
  private chunks: Buffer[] = [];
  private size = 0;

  constructor(private readonly limit: number) {
    super();
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    this.size += chunk.length;
    if (this.size <= this.limit) this.chunks.push(chunk);
    else this.chunks = [];
    callback(null, chunk);
  }

  /** The bytes that passed, or undefined when they were more than `limit`. */
  kept(): Buffer | undefined {
    return this.size <= this.limit ? Buffer.concat(this.chunks) : undefined;
  }
}
