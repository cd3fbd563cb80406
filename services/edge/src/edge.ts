import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import https from 'node:https';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { errors, type AppError } from '@s2s/core';
import { answerParserRefusals, httpErrorAnswer, newRequestId, pathOf, writeRawError } from '@s2s/http-errors';
import type { Logger } from '@s2s/telemetry';
import { createProxyServer } from 'http-proxy-3';
import { backendAgent, forwarder } from './forward.js';
import { Handoffs, type HandoffChannel } from './handoff.js';

export interface EdgeOptions {
  /** Base URL of the control plane (every path but /v1/realtime). */
  controlPlane: string;
  /** Base URLs of the relays; /v1/realtime goes to them in turn. */
  relays: readonly string[];
  /** With a certificate and key the edge serves https and wss. */
  tls?: { cert: Buffer | string; key: Buffer | string } | undefined;
  /**
   * The IPC channel to a parent that brokers connection handoffs to the relays (npm start): upgrades then
   * leave the edge after their request is read; without it (or with TLS) the edge proxies them.
   */
  handoff?: HandoffChannel | undefined;
  logger: Logger;
}

export interface Edge {
  server: http.Server | https.Server;
  close(): Promise<void>;
}

const REALTIME_PATH = '/v1/realtime';
/** WebRTC calls (decisions.md, "WebRTC"): answered by a relay, whose UDP port then carries the call's media. */
const CALLS_PATH = '/v1/realtime/calls';
/** Phone media streams (`/v1/telephony/twilio`, `/telnyx`): WebSocket upgrades for the relays. */
const TELEPHONY_PREFIX = '/v1/telephony/';
/** How long a closing edge waits for the relays to answer the connections it handed over. */
const HANDOFF_CLOSE_MS = 2000;

/**
 * The public origin of `npm start` (decisions.md, "Running it"): one port for the HTTP API and `/v1/realtime`,
 * a well-kept proxy (http-proxy-3) doing the forwarding, WebSocket upgrades included, so no framing is written
 * here. Realtime goes to the relays in turn: a session lives in the database, so any relay serves any session.
 * With a handoff channel and no TLS, a `/v1/realtime` upgrade's connection itself goes to the relay once its
 * request is read (./handoff.ts): its frames then never pass through the edge.
 */
export function createEdge(opts: EdgeOptions): Edge {
  const { logger } = opts;
  // Keep-alive to the backends: a request does not pay a TCP handshake on the loopback.
  const agent = backendAgent();
  const proxy = createProxyServer({ xfwd: true, agent });
  // http-proxy-3 re-emits a proxied upgrade's client socket errors on itself, and throws them while nothing
  // listens: a client resetting its WebSocket would otherwise end the process.
  proxy.on('error', (err) => logger.debug({ code: codeOf(err) }, 'proxied connection failed'));
  // A WebSocket's relay side failing after the 101 closes the client's connection: no HTTP answer fits there.
  const upgraded = new WeakSet<Duplex>();
  proxy.on('proxyReqWs', (proxyReq, _req, socket) =>
    proxyReq.once('upgrade', (_res, relaySocket: Duplex) => {
      upgraded.add(socket);
      // A client gone before the relay's 101 (or going later) must not leave the relay side open: the proxy's pipe
      // to a dead socket does not end it (seen on Node 24), and the relay would keep the attachment.
      if (socket.destroyed) relaySocket.destroy();
      else socket.once('close', () => relaySocket.destroy());
    }),
  );
  let next = 0;
  const relayIndex = () => next++ % opts.relays.length;
  const relay = () => opts.relays[relayIndex()]!;
  const proxyUpgrade = (req: IncomingMessage, socket: Duplex, head: Buffer, i: number) => {
    const target = opts.relays[i]!;
    // An upgraded connection never returns to the pool, so an upgrade takes a fresh one, never a stale pooled one.
    proxy.ws(req, socket, head, { target, agent: false }, (err) => {
      if (upgraded.has(socket)) {
        logger.debug({ code: codeOf(err) }, 'relay side of a proxied WebSocket failed');
        socket.destroy();
        return;
      }
      logger.warn({ err, target }, 'relay did not answer the upgrade');
      writeRawError(socket, errors.serviceUnavailable(err, 'No relay answered; attach again shortly.'), newRequestId());
    });
  };
  const handoffs = opts.handoff && !opts.tls ? new Handoffs(opts.handoff, logger, proxyUpgrade) : null;

  const forward = forwarder(proxy, logger, (err, res, target) => {
    logger.warn({ err, target }, 'backend did not answer');
    if (!res.headersSent) sendError(res, errors.serviceUnavailable(err, 'The gateway is starting or restarting; retry shortly.'));
    else res.destroy();
  });
  const onRequest = (req: IncomingMessage, res: ServerResponse) => {
    const path = pathOf(req.url);
    const toRelay = path === REALTIME_PATH || path === CALLS_PATH || path.startsWith(`${CALLS_PATH}/`);
    forward(req, res, toRelay ? relay() : opts.controlPlane);
  };
  const server = opts.tls ? https.createServer({ cert: opts.tls.cert, key: opts.tls.key }, onRequest) : http.createServer(onRequest);

  // A client may vanish at any point (its process exits, its connection reset): every socket the edge accepts has an
  // error listener of its own, whatever the HTTP server or the proxy do with it, so no reset ever ends the process.
  const onClientError = (socket: Duplex) => (err: Error) => {
    logger.debug({ code: codeOf(err) }, 'client connection failed');
    socket.destroy();
  };
  server.on('connection', (socket: Socket) => socket.on('error', onClientError(socket)));
  server.on('secureConnection', (socket: Socket) => socket.on('error', onClientError(socket)));
  // Before its handshake completes a TLS connection's errors come here (without a listener Node destroys it).
  server.on('tlsClientError', (err: Error, socket: Duplex) => onClientError(socket)(err));

  server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    socket.on('error', onClientError(socket));
    const path = pathOf(req.url);
    if (path !== REALTIME_PATH && !path.startsWith(TELEPHONY_PREFIX)) return writeRawError(socket, errors.notFound(), newRequestId());
    const i = relayIndex();
    if (!handoffs?.handOff(req, socket, head, i)) proxyUpgrade(req, socket, head, i);
  });
  answerParserRefusals(server, logger);

  return {
    server,
    close: async () => {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections();
      // A connection handed over is the server's until the relay has answered it.
      await handoffs?.close(HANDOFF_CLOSE_MS);
      await closed;
      proxy.close();
      agent.destroy();
    },
  };
}

function codeOf(err: Error): string | undefined {
  return (err as NodeJS.ErrnoException).code;
}

function sendError(res: ServerResponse, err: AppError): void {
  const requestId = newRequestId();
  const { status, headers, body } = httpErrorAnswer(err, requestId);
  res.writeHead(status, {
    ...headers,
    'Content-Type': 'application/json; charset=utf-8',
    'X-Request-Id': requestId,
    'Cache-Control': 'no-store',
  });
  res.end(JSON.stringify(body));
}
