import type { IncomingMessage, Server } from 'node:http';
import type { Server as TlsServer } from 'node:https';
import type { Duplex } from 'node:stream';
import { AppError, errors } from '@s2s/core';
import { httpStatus, newRequestId, writeRawError } from './answer.js';

/** Where a refusal is logged (a pino logger fits). */
export interface RefusalLog {
  info(fields: Record<string, unknown>, msg: string): void;
}

/** What Node's parser refused, as the error model says it (docs/architecture.md "Odd HTTP input"). */
function refusal(code: string | undefined): AppError {
  if (code === 'HPE_HEADER_OVERFLOW') {
    return new AppError('request_header_fields_too_large', 'The request headers are larger than 16 KiB.');
  }
  if (code === 'ERR_HTTP_REQUEST_TIMEOUT' || code === 'ERR_HTTP_REQUEST_HEADERS_TIMEOUT') {
    return new AppError('request_timeout', 'The request did not arrive in time.');
  }
  return errors.invalidRequest('The request is not valid HTTP/1.1 (request line, header bytes or framing).');
}

type InFlight = { writableFinished: boolean; req?: { complete: boolean }; once(event: 'finish', fn: () => void): unknown };

/**
 * The response of an earlier, completely received request still being written on this socket (pipelining),
 * if any. A response whose own request is incomplete belongs to the refused request (a bad body).
 */
function earlierResponse(socket: Duplex): InFlight | undefined {
  const res = (socket as { _httpMessage?: InFlight | null })._httpMessage;
  return res && !res.writableFinished && res.req?.complete ? res : undefined;
}

/**
 * The one answer of every HTTP server (control plane, relay, edge) to requests Node refuses before any handler
 * sees them (bad header bytes, oversized headers, TE with CL, unknown methods) and to CONNECT: an ErrorResponse
 * with a fresh request id, where the connection allows an answer, then the connection closes. `onRefused` runs
 * first for every refused connection (the relay settles a connection handed over to it).
 */
export function answerParserRefusals(server: Server | TlsServer, log: RefusalLog, onRefused?: (socket: Duplex) => void): void {
  server.on('clientError', (err: Error & { code?: string }, socket: Duplex) => {
    onRefused?.(socket);
    if (err.code === 'ECONNRESET' || err.code === 'EPIPE' || !socket.writable) {
      socket.destroy();
      return;
    }
    const requestId = newRequestId();
    const appError = refusal(err.code);
    log.info({ request_id: requestId, parser_code: err.code, status: httpStatus(appError.code) }, 'request refused by the HTTP parser');
    // Answers go out in request order: after the response of an earlier pipelined request.
    const earlier = earlierResponse(socket);
    if (earlier) earlier.once('finish', () => writeRawError(socket, appError, requestId));
    else writeRawError(socket, appError, requestId);
  });
  server.on('connect', (_req: IncomingMessage, socket: Duplex) => {
    const requestId = newRequestId();
    log.info({ request_id: requestId, method: 'CONNECT', status: 404 }, 'request completed');
    writeRawError(socket, new AppError('not_found', 'No such route.'), requestId);
  });
}
