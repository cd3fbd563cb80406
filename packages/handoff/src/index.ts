// The connection handoff of `npm start` (docs/architecture.md, "The edge"): the edge reads a /v1/realtime
// upgrade request, then passes the client's TCP connection itself over Node's IPC channel to its parent, which
// passes it on to relay i; the relay serves the request as if it had accepted the connection. From then on
// frames go client ↔ relay: the edge is out of the per-frame path. The parent's part is ../broker.mjs.
import type http from 'node:http';
import net from 'node:net';

/** edge → parent → relay, with the connection's handle. */
export const HANDOFF = 's2s:handoff';
/** relay → parent → edge: the relay has answered the request (101, or an error response), or the client left. */
export const HANDOFF_DONE = 's2s:handoff-done';
/** parent → edge: the relay could not be given the connection. */
export const HANDOFF_FAILED = 's2s:handoff-failed';
/** parent → edge: relay i's channel closed (it exited); what it had not answered never will be. */
export const RELAY_GONE = 's2s:relay-gone';

export interface HandoffMessage {
  type: typeof HANDOFF;
  id: number;
  /** Index of the relay, in the order the parent knows them (the edge's RELAY_URLS). */
  relay: number;
  /** Base64 of the request as the client sent it (request line, headers) and the bytes read after it. */
  request: string;
}
export interface HandoffDone {
  type: typeof HANDOFF_DONE;
  id: number;
}
export interface HandoffFailed {
  type: typeof HANDOFF_FAILED;
  id: number;
}
export interface RelayGone {
  type: typeof RELAY_GONE;
  relay: number;
}
export type BrokerMessage = HandoffDone | HandoffFailed | RelayGone;

const isObject = (m: unknown): m is Record<string, unknown> => typeof m === 'object' && m !== null;

export function isHandoff(m: unknown): m is HandoffMessage {
  return isObject(m) && m.type === HANDOFF && typeof m.id === 'number' && typeof m.request === 'string';
}

export function isBrokerMessage(m: unknown): m is BrokerMessage {
  return isObject(m) && (m.type === HANDOFF_DONE || m.type === HANDOFF_FAILED || m.type === RELAY_GONE);
}

/** The native TCP handle under a net.Socket: what crosses the IPC channel ('net.Native'). */
export interface NativeHandle {
  reading?: boolean;
  readStart(): number;
  readStop(): number;
  close(): void;
}

/**
 * A connection handed over, as a socket that reads nothing until its server asks: bytes the client sends
 * after the request (its first frames, right after the 101) wait in the kernel, none is lost.
 */
export function adoptedSocket(handle: unknown): net.Socket {
  // `handle` and `pauseOnCreate` are net.Socket options Node's own handle passing uses; @types/node omits them.
  return new net.Socket({ handle, readable: true, writable: true, pauseOnCreate: true } as net.SocketConstructorOpts);
}

/** Feeds a handed-over connection to an HTTP server as if it had accepted it, its request already read. */
export function injectConnection(server: http.Server, socket: net.Socket, request: Buffer): void {
  server.emit('connection', socket);
  socket.emit('data', request);
}

/**
 * The relay's side: serves every connection handed over on this process's IPC channel. `serve` resolves
 * once the request has been answered (or the client left); the edge then lets go of its copy. Returns false
 * when the process has no IPC channel (nothing to serve).
 */
export function serveHandoffs(serve: (socket: net.Socket, request: Buffer) => Promise<void>): boolean {
  if (!process.send || !process.channel) return false;
  const done = (id: number) => {
    // With a callback, a channel closed meanwhile is not an 'error' event (the parent is gone: nobody to tell).
    if (process.connected) process.send?.({ type: HANDOFF_DONE, id } satisfies HandoffDone, undefined, undefined, () => {});
  };
  process.on('message', (m: unknown, handle: unknown) => {
    if (!isHandoff(m) || !handle) return;
    const socket = adoptedSocket(handle);
    socket.on('error', () => socket.destroy());
    serve(socket, Buffer.from(m.request, 'base64')).then(
      () => done(m.id),
      () => done(m.id),
    );
  });
  // The channel alone does not keep the process alive: it exits as it would without one.
  process.channel.unref();
  return true;
}
