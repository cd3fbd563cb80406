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
  socket: net.Socket;
  relay: number;
}

/**
 * The edge's side of the connection handoff (@s2s/handoff): an upgrade's connection goes to relay i through
 * the parent; the edge keeps its copy of the connection, not reading from it, until the relay has answered,
 * so that a relay that exits first still leaves the client a 503 ErrorResponse, never a hang.
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
  ) {
    channel.onMessage((m) => {
      if (!isBrokerMessage(m)) return;
      if (m.type === RELAY_GONE) {
        this.gone.add(m.relay);
        for (const [id, f] of this.inFlight) if (f.relay === m.relay) this.fail(id);
      } else if (m.type === HANDOFF_DONE) this.release(m.id);
      else this.fail(m.id);
    });
    channel.onDisconnect(() => {
      this.open = false;
      for (const id of [...this.inFlight.keys()]) this.fail(id);
    });
  }

  /**
   * Hands the connection of `req` to relay `relay`; false when it cannot go (a TLS connection, whose state lives
   * here; no channel; that relay gone; bytes already buffered here), and the caller proxies it instead.
   */
  handOff(req: IncomingMessage, socket: Duplex, head: Buffer, relay: number): boolean {
    if (!this.open || !this.channel.connected || this.gone.has(relay)) return false;
    const handle = (socket as { _handle?: NativeHandle | null })._handle;
    if (!(socket instanceof net.Socket) || 'encrypted' in socket || !handle || socket.readableLength > 0) return false;
    // Nothing more is read here: what the client sends next waits in the kernel for the relay.
    socket.pause();
    handle.reading = false;
    handle.readStop();
    const id = this.nextId++;
    this.inFlight.set(id, { socket, relay });
    const request = Buffer.concat([requestHead(req, socket), head]).toString('base64');
    this.channel.send({ type: HANDOFF, id, relay, request }, handle, (err) => {
      if (err) this.fail(id, err);
    });
    return true;
  }

  /** The relay has answered: the edge lets go of its copy (the connection stays open in the relay). */
  private release(id: number): void {
    const f = this.take(id);
    f?.socket.destroy();
  }

  private fail(id: number, err?: Error): void {
    const f = this.take(id);
    if (!f) return;
    this.logger.warn({ err, relay: f.relay }, 'relay did not take the connection');
    writeRawError(f.socket, errors.serviceUnavailable(err, 'No relay answered; attach again shortly.'), newRequestId());
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
