import { STATUS_CODES, type IncomingMessage, type Server } from 'node:http';
import type { Duplex } from 'node:stream';
import { errorTypeForStatus, type ErrorResponse } from '@s2s/contract';
import { AppError, errors } from '@s2s/core';
import type { Logger } from '@s2s/telemetry';
import { httpStatus, newRequestId } from '@s2s/http-errors';

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

/** Writes a whole ErrorResponse on a raw socket and closes it; the parser's state rules out anything more. */
function writeRefusal(socket: Duplex, err: AppError, requestId: string): void {
  const status = httpStatus(err.code);
  const response: ErrorResponse = {
    error: { type: errorTypeForStatus(status), code: err.code, message: err.message, request_id: requestId },
  };
  const body = JSON.stringify(response);
  socket.end(
    [
      `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? ''}`,
      'Content-Type: application/json; charset=utf-8',
      `Content-Length: ${Buffer.byteLength(body)}`,
      `X-Request-Id: ${requestId}`,
      'Cache-Control: no-store',
      'Connection: close',
      '',
      body,
    ].join('\r\n'),
  );
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
 * Requests Node refuses before express sees them (bad header bytes, oversized headers, TE with CL, unknown
 * methods) and CONNECT get an ErrorResponse with a fresh request id, where the connection allows an answer.
 */
export function answerParserRefusals(server: Server, logger: Logger): void {
  server.on('clientError', (err: Error & { code?: string }, socket: Duplex) => {
    if (err.code === 'ECONNRESET' || !socket.writable) {
      socket.destroy();
      return;
    }
    const requestId = newRequestId();
    const appError = refusal(err.code);
    logger.info({ request_id: requestId, parser_code: err.code, status: httpStatus(appError.code) }, 'request refused by the HTTP parser');
    const answer = () => {
      if (socket.writable) writeRefusal(socket, appError, requestId);
      else socket.destroy();
    };
    // Answers go out in request order: after the response of an earlier pipelined request.
    const earlier = earlierResponse(socket);
    if (earlier) earlier.once('finish', answer);
    else answer();
  });
  server.on('connect', (_req: IncomingMessage, socket: Duplex) => {
    const requestId = newRequestId();
    logger.info({ request_id: requestId, method: 'CONNECT', status: 404 }, 'request completed');
    writeRefusal(socket, new AppError('not_found', 'No such route.'), requestId);
  });
}
