import { WebSocket as WS } from 'ws';
import { REALTIME_PROTOCOL } from '@s2s/contract';
import { parseErrorResponse, S2SApiError } from './errors.js';
import type { OpenSocketOptions, SocketLike } from './websocket.js';

/**
 * The svc-realtime-v1 socket in Node, with the `ws` package: the credential in `Authorization`, and a
 * refused upgrade read as its ErrorResponse.
 */
export function openWsSocket(opts: OpenSocketOptions): SocketLike {
  const { url, credential } = opts;
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
