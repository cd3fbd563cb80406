import type { Bus, Subscription } from '@s2s/bus';
import { CloseCode, ControlSignal, REALTIME_ERROR_TYPE, type ControlClosed, type ControlOpened } from '@s2s/contract';
import { isNewerAttachment, newId } from '@s2s/core';
import type { Logger } from '@s2s/telemetry';
import type { RawData, WebSocket } from 'ws';
import { closeSocket, sendText } from '../attachment/client-socket.js';

const decoder = new TextDecoder();
const encoder = new TextEncoder();

export interface ControlSocketDeps {
  ws: WebSocket;
  bus: Bus;
  sessionId: string;
  log: Logger;
  onClosed(c: ControlSocket): void;
}

/**
 * The application's side of a control socket (`GET /v1/realtime?call_id=`, decisions.md, "Control sockets"):
 * a pipe between its WebSocket and the bus, to and from the relay that holds the session's media (control/
 * bridge.ts), which may be another one. It announces itself when it opens and again when media attaches;
 * a newer control socket of the same session closes it with 4001; the session's end closes it with 1000.
 */
export class ControlSocket {
  readonly id = newId('ctl');
  readonly startedAtMs = Date.now();
  readonly sessionId: string;
  private readonly subs: Subscription[] = [];
  private closed = false;

  constructor(private readonly deps: ControlSocketDeps) {
    this.sessionId = deps.sessionId;
  }

  start(): void {
    const { bus, ws, sessionId } = this.deps;
    this.subs.push(
      bus.nc.subscribe(bus.subjects.controlOut(sessionId), {
        callback: (err, msg) => {
          if (!err) sendText(ws, decoder.decode(msg.data));
        },
      }),
      bus.nc.subscribe(bus.subjects.control(sessionId), {
        callback: (err, msg) => {
          if (!err) this.onSignal(msg.data);
        },
      }),
    );
    ws.on('message', this.onMessage);
    ws.on('close', () => this.cleanup());
    ws.on('error', (err) => this.deps.log.debug({ err }, 'control socket error'));
    this.announce();
  }

  /** Closes the socket (4001 replaced, 1000 session ended, 1012 draining). */
  close(code: number, reason: string): void {
    closeSocket(this.deps.ws, { code, reason });
    this.cleanup();
  }

  private readonly onMessage = (data: RawData, isBinary: boolean): void => {
    const { bus, ws, sessionId } = this.deps;
    if (isBinary) {
      const error = { type: 'error', code: 'invalid_event', message: 'Events are JSON text frames.', param: null, event_id: null };
      sendText(ws, JSON.stringify({ type: 'error', event_id: newId('evt'), error: { ...error, type: REALTIME_ERROR_TYPE.invalid_event } }));
      return;
    }
    try {
      bus.nc.publish(bus.subjects.controlIn(sessionId), data as Buffer);
    } catch (err) {
      this.deps.log.warn({ err }, 'control publish failed');
    }
  };

  private onSignal(data: Uint8Array): void {
    let parsed;
    try {
      parsed = ControlSignal.safeParse(JSON.parse(decoder.decode(data)));
    } catch {
      return;
    }
    if (!parsed.success) return;
    const s = parsed.data;
    if (s.type === 'control.media_attached') this.announce();
    else if (s.type === 'control.opened' && s.control_id !== this.id) {
      if (isNewerAttachment({ id: s.control_id, startedAtMs: s.started_at }, { id: this.id, startedAtMs: this.startedAtMs })) {
        this.close(CloseCode.replaced, 'replaced by a newer control socket');
      }
    }
  }

  private announce(): void {
    const { bus, sessionId } = this.deps;
    const opened: ControlOpened = {
      type: 'control.opened',
      version: 1,
      session_id: sessionId,
      control_id: this.id,
      started_at: this.startedAtMs,
    };
    this.publish(bus.subjects.control(sessionId), JSON.stringify(opened));
  }

  private cleanup(): void {
    if (this.closed) return;
    this.closed = true;
    const { bus, sessionId } = this.deps;
    for (const s of this.subs) s.unsubscribe();
    this.subs.length = 0;
    const closed: ControlClosed = { type: 'control.closed', version: 1, session_id: sessionId, control_id: this.id };
    this.publish(bus.subjects.control(sessionId), JSON.stringify(closed));
    this.deps.onClosed(this);
  }

  private publish(subject: string, text: string): void {
    try {
      this.deps.bus.nc.publish(subject, encoder.encode(text));
    } catch (err) {
      this.deps.log.warn({ err }, 'control publish failed');
    }
  }
}
