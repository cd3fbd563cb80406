import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import https from 'node:https';
import type { Duplex } from 'node:stream';
import { errorTypeForStatus, ERROR_STATUS, type ErrorCode } from '@s2s/contract';
import type { Logger } from '@s2s/telemetry';
import { createProxyServer } from 'http-proxy-3';
import { randomUUID } from 'node:crypto';

export interface EdgeOptions {
  /** Base URL of the control plane (every path but /v1/realtime). */
  controlPlane: string;
  /** Base URLs of the relays; /v1/realtime goes to them in turn. */
  relays: readonly string[];
  /** With a certificate and key the edge serves https and wss. */
  tls?: { cert: Buffer | string; key: Buffer | string } | undefined;
  logger: Logger;
}

export interface Edge {
  server: http.Server | https.Server;
  close(): Promise<void>;
}

const REALTIME_PATH = '/v1/realtime';

/**
 * The public origin of `npm start` (decisions.md, "Running it"): one port for the HTTP API and `/v1/realtime`,
 * a well-kept proxy (http-proxy-3) doing the forwarding, WebSocket upgrades included, so no framing is written
 * here. Realtime goes to the relays in turn: a session lives in the database, so any relay serves any session.
 */
export function createEdge(opts: EdgeOptions): Edge {
  const { logger } = opts;
  // Keep-alive to the backends: a request does not pay a TCP handshake on the loopback.
  const agent = new http.Agent({ keepAlive: true, maxSockets: 256 });
  const proxy = createProxyServer({ xfwd: true, agent });
  let next = 0;
  const relay = () => opts.relays[next++ % opts.relays.length]!;

  const onRequest = (req: IncomingMessage, res: ServerResponse) => {
    const target = pathOf(req.url) === REALTIME_PATH ? relay() : opts.controlPlane;
    proxy.web(req, res, { target }, (err) => {
      logger.warn({ err, target }, 'backend did not answer');
      if (!res.headersSent) sendError(res, 'service_unavailable', 'The gateway is starting or restarting; retry shortly.');
      else res.destroy();
    });
  };
  const server = opts.tls ? https.createServer({ cert: opts.tls.cert, key: opts.tls.key }, onRequest) : http.createServer(onRequest);

  server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    socket.on('error', () => socket.destroy());
    if (pathOf(req.url) !== REALTIME_PATH) return writeRawError(socket, 'not_found', 'No such route.');
    const target = relay();
    proxy.ws(req, socket, head, { target }, (err) => {
      logger.warn({ err, target }, 'relay did not answer the upgrade');
      writeRawError(socket, 'service_unavailable', 'No relay answered; attach again shortly.');
    });
  });
  server.on('clientError', (_err, socket: Duplex) =>
    writeRawError(socket, 'invalid_request', 'The request could not be parsed as HTTP/1.1.'),
  );

  return {
    server,
    close: async () => {
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
      proxy.close();
      agent.destroy();
    },
  };
}

function errorBody(code: ErrorCode, message: string) {
  const requestId = `req_${randomUUID().replaceAll('-', '')}`;
  const status = ERROR_STATUS[code];
  return { requestId, status, body: JSON.stringify({ error: { type: errorTypeForStatus(status), code, message, request_id: requestId } }) };
}

function sendError(res: ServerResponse, code: ErrorCode, message: string): void {
  const { requestId, status, body } = errorBody(code, message);
  res.writeHead(status, {
    'Content-Type': 'application/json; charset=utf-8',
    'X-Request-Id': requestId,
    'Retry-After': '1',
    'Cache-Control': 'no-store',
  });
  res.end(body);
}

/** An ErrorResponse on a socket that asked for an upgrade (nothing was upgraded). */
function writeRawError(socket: Duplex, code: ErrorCode, message: string): void {
  if (!socket.writable) return void socket.destroy();
  const { requestId, status, body } = errorBody(code, message);
  socket.end(
    [
      `HTTP/1.1 ${status} ${http.STATUS_CODES[status] ?? ''}`,
      'Connection: close',
      'Content-Type: application/json; charset=utf-8',
      `Content-Length: ${Buffer.byteLength(body)}`,
      `X-Request-Id: ${requestId}`,
      'Cache-Control: no-store',
      '',
      body,
    ].join('\r\n'),
  );
}

function pathOf(url: string | undefined): string {
  const u = url ?? '/';
  const q = u.indexOf('?');
  return q === -1 ? u : u.slice(0, q);
}
