import type { ClientFrames } from '../codecs/events.js';
import { WebSocket } from 'ws';

/** How long a client may take to answer our close frame. */
const CLOSE_HANDSHAKE_MS = 2000;
/** ws sends a Buffer as a binary frame unless told otherwise; every event is a text frame. */
export const TEXT_FRAME = { binary: false } as const;

export function sendText(ws: WebSocket, frames: ClientFrames): void {
  if (frames === null || ws.readyState !== WebSocket.OPEN) return;
  if (typeof frames === 'string' || Buffer.isBuffer(frames)) return ws.send(frames, TEXT_FRAME);
  for (const f of frames as readonly (string | Buffer)[]) ws.send(f, TEXT_FRAME);
}

/** Closes with a code; a client that never answers the close frame must not hold the socket for ws's 30 s. */
export function closeSocket(ws: WebSocket, c: { code: number; reason: string }): void {
  if (ws.readyState !== WebSocket.OPEN && ws.readyState !== WebSocket.CONNECTING) return;
  ws.close(c.code, c.reason);
  setTimeout(() => ws.terminate(), CLOSE_HANDSHAKE_MS).unref();
}
