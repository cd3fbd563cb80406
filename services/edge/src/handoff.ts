import type { IncomingMessage } from 'node:http';
import net from 'node:net';
import type { Duplex } from 'node:stream';
import { errors } from '@s2s/core';
import { HANDOFF, HANDOFF_DONE, RELAY_GONE, isBrokerMessage, type HandoffMessage, type NativeHandle } from '@s2s/handoff';
import { newRequestId, writeRawError } from '@s2s/http-errors';
import type { Logger } from '@s2s/telemetry';

/** The edge's IPC channel to the parent that brokers handoffs. */
export interface HandoffChannel {
  readonly connected: boolean;
  send(message: HandoffMessage, handle: NativeHandle, callback: (err: Error | null) => void): void;
  onMessage(listener: (message: unknown) => void): void;
  onDisconnect(listener: () => void): void;
}

/** This process's IPC channel to its parent, if it has one. */
export function parentChannel(): HandoffChannel | undefined {
  if (!process.send || !process.channel) return undefined;
  return {
    get connected() {
      return process.connected;
    },
    // The raw handle crosses as 'net.Native'; @types/node lists only the wrapped kinds.
    send: (message, handle, callback) => void process.send?.(message, handle as unknown as net.Socket, undefined, callback),
    onMessage: (listener) => void process.on('message', listener),
    onDisconnect: (listener) => void process.on('disconnect', listener),
  };
}

interface InFlight {
  req: IncomingMessage;
  socket: net.Socket;
  head: Buffer;
  relay: number;
}

/** The proxy path, for a connection that could not be handed over. */
export type ProxyUpgrade = (req: IncomingMessage, socket: Duplex, head: Buffer, relay: number) => void;

/**
 * The edge's side of the connection handoff (@s2s/handoff): an upgrade's connection goes to relay i through
 * the parent; the edge keeps its copy of the connection, not reading from it, until the relay has answered,
 * so that a relay that exits first still leaves the client a 503 ErrorResponse, never a hang. A connection
 * the parent could not give to the relay (no channel to it) is proxied to the relay's port instead.
 */
export class Handoffs {
  private readonly inFlight = new Map<number, InFlight>();
  private readonly gone = new Set<number>();
  private nextId = 1;
  private open = true;
  private settled: (() => void) | null = null;

  constructor(
    private readonly channel: HandoffChannel,
    private readonly logger: Logger,
    private readonly proxy: ProxyUpgrade,
  ) {
    channel.onMessage((m) => {
      if (!isBrokerMessage(m)) return;
      if (m.type === RELAY_GONE) {
        this.gone.add(m.relay);
        for (const [id, f] of this.inFlight) if (f.relay === m.relay) this.fail(id);
      } else if (m.type === HANDOFF_DONE) this.release(m.id);
      else this.fallBack(m.id);
    });
    // The parent is gone: whether a connection in flight reached its relay is unknown, so the edge only lets go
    // of its copies (a relay that has one serves it; one that reached no relay closes).
    channel.onDisconnect(() => {
      this.open = false;
      for (const id of [...this.inFlight.keys()]) this.release(id);
    });
  }

  /**
   * Hands the connection of `req` to relay `relay`; false when it cannot go (a TLS connection, whose state lives
   * here; no channel; that relay gone; bytes already buffered here), and the caller proxies it instead.
   */
  handOff(req: IncomingMessage, socket: Duplex, head: Buffer, relay: number): boolean {
    if (!this.open || !this.channel.connected || this.gone.has(relay)) return false;
    const handle = nativeHandle(socket);
    if (!(socket instanceof net.Socket) || 'encrypted' in socket || !handle || socket.readableLength > 0) return false;
    // Nothing more is read here: what the client sends next waits in the kernel for the relay.
    socket.pause();
    handle.reading = false;
    handle.readStop();
    const id = this.nextId++;
    this.inFlight.set(id, { req, socket, head, relay });
    const request = Buffer.concat([requestHead(req, socket), head]).toString('base64');
    this.channel.send({ type: HANDOFF, id, relay, request }, handle, (err) => {
      if (err) this.fallBack(id);
    });
    return true;
  }

  /** The connection never left: the proxy path serves it, the edge reading it again. */
  private fallBack(id: number): void {
    const f = this.take(id);
    if (!f) return;
    this.logger.warn({ relay: f.relay }, 'connection not handed over; proxying it');
    // The stream believes a read is still pending (it was stopped under it), so it would not restart one.
    const handle = nativeHandle(f.socket);
    if (handle && !handle.reading) {
      handle.reading = true;
      handle.readStart();
    }
    this.proxy(f.req, f.socket, f.head, f.relay);
  }

  /** The relay has answered: the edge lets go of its copy (the connection stays open in the relay). */
  private release(id: number): void {
    const f = this.take(id);
    f?.socket.destroy();
  }

  /** The relay exited before answering (or the edge stops): the client gets a 503 on the edge's copy. */
  private fail(id: number): void {
    const f = this.take(id);
    if (!f) return;
    this.logger.warn({ relay: f.relay }, 'relay did not answer a connection handed to it');
    writeRawError(f.socket, errors.serviceUnavailable(undefined, 'No relay answered; attach again shortly.'), newRequestId());
  }

  private take(id: number): InFlight | undefined {
    const f = this.inFlight.get(id);
    this.inFlight.delete(id);
    if (this.inFlight.size === 0) this.settled?.();
    return f;
  }

  /** No more handoffs; waits up to `timeoutMs` for the relays' answers, then answers the rest 503. */
  async close(timeoutMs: number): Promise<void> {
    this.open = false;
    if (this.inFlight.size > 0) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, timeoutMs);
        this.settled = () => (clearTimeout(timer), resolve());
      });
    }
    for (const id of [...this.inFlight.keys()]) this.fail(id);
  }
}

const nativeHandle = (socket: Duplex) => (socket as { _handle?: NativeHandle | null })._handle;

/**
 * The request as the relay reads it: the request line and the client's headers as they came (names, order,
 * repeats), plus X-Forwarded-For/-Port/-Proto/-Host as http-proxy-3 (xfwd) sets them on the proxy path, so a
 * relay sees the same request either way.
 */
export function requestHead(req: IncomingMessage, socket: net.Socket): Buffer {
  const lines = [`${req.method} ${req.url} HTTP/${req.httpVersion}`];
  const raw = req.rawHeaders;
  for (let i = 0; i + 1 < raw.length; i += 2) {
    if (!/^x-forwarded-(for|port|proto)$/i.test(raw[i]!)) lines.push(`${raw[i]}: ${raw[i + 1]}`);
  }
  const host = req.headers.host ?? '';
  const forwarded = { for: socket.remoteAddress ?? '', port: /:(\d+)$/.exec(host)?.[1] ?? '80', proto: 'ws' };
  for (const [name, value] of Object.entries(forwarded)) {
    const before = req.headers[`x-forwarded-${name}`];
    lines.push(`X-Forwarded-${name[0]!.toUpperCase()}${name.slice(1)}: ${before ? `${String(before)},` : ''}${value}`);
  }
  if (req.headers['x-forwarded-host'] === undefined) lines.push(`X-Forwarded-Host: ${host}`);
  return Buffer.from(`${lines.join('\r\n')}\r\n\r\n`, 'latin1');
}
