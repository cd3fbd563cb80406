import { ControlSignal, type ControlMediaAttached } from '@s2s/contract';
import { isNewerAttachment } from '@s2s/core';
import type { Logger } from '@s2s/telemetry';
import type { Bus, Subscription } from '@s2s/bus';
import { OpenAIGaCodec, type SessionIdentity } from '../codecs/openai/codec.js';
import type { InternalClientEvent, InternalServerEvent } from '../codecs/events.js';

const decoder = new TextDecoder();
const encoder = new TextEncoder();

export interface ControlBridgeDeps {
  bus: Bus;
  session: SessionIdentity;
  attachmentId: string;
  /** A client event from the control socket, for the attachment's upstream (as if its client had sent it). */
  accept(e: InternalClientEvent): void;
  /** session.created with the settings in force: what a control socket hears first. */
  snapshot(): InternalServerEvent;
  log: Logger;
}

/**
 * The media attachment's side of control sockets (decisions.md, "Control sockets (sideband)"). While a
 * control socket of its session is open on any relay, every server event but audio goes to it as OpenAI-dialect
 * text on the bus, and its client events come back the same way and enter the attachment like its own client's
 * (audio refused). The newest control socket is the one bridged; it neither replaces the attachment nor ends
 * the session. Core NATS keeps one publisher's order, so events arrive in the order they were sent.
 */
export class ControlBridge {
  /** The control socket bridged now. */
  private active: { id: string; startedAtMs: number } | null = null;
  /** The OpenAI dialect, for the control socket (its own event ids). */
  private readonly codec: OpenAIGaCodec;
  private readonly subs: Subscription[] = [];
  private readonly outSubject: string;

  constructor(private readonly deps: ControlBridgeDeps) {
    this.codec = new OpenAIGaCodec(deps.session);
    this.outSubject = deps.bus.subjects.controlOut(deps.session.id);
  }

  get bridged(): boolean {
    return this.active !== null;
  }

  start(): void {
    const { bus, session, attachmentId } = this.deps;
    this.subs.push(
      bus.nc.subscribe(bus.subjects.control(session.id), {
        callback: (err, msg) => {
          if (!err) this.onSignal(msg.data);
        },
      }),
      bus.nc.subscribe(bus.subjects.controlIn(session.id), {
        callback: (err, msg) => {
          if (!err) this.onClientEvent(msg.data);
        },
      }),
    );
    // A control socket opened before this attachment announces itself again when it hears this.
    const attached: ControlMediaAttached = {
      type: 'control.media_attached',
      version: 1,
      session_id: session.id,
      attachment_id: attachmentId,
    };
    this.publish(bus.subjects.control(session.id), JSON.stringify(attached));
  }

  stop(): void {
    for (const s of this.subs) s.unsubscribe();
    this.subs.length = 0;
    this.active = null;
  }

  /** One server event of the attachment (never audio deltas: those do not pass here). */
  forward(e: InternalServerEvent): void {
    if (this.active === null || e.type === 'response.audio.delta') return;
    const frame = this.codec.encode(e);
    this.publish(this.outSubject, frame);
  }

  /** A DTMF digit of a phone call, as OpenAI's `input_audio_buffer.dtmf_event_received`. */
  dtmf(digit: string, receivedAtMs: number): void {
    if (this.active === null) return;
    const event = {
      type: 'input_audio_buffer.dtmf_event_received',
      event_id: `dtmf_${receivedAtMs}_${digit}`,
      event: digit,
      received_at: Math.floor(receivedAtMs / 1000),
    };
    this.publish(this.outSubject, JSON.stringify(event));
  }

  private onSignal(data: Uint8Array): void {
    let signal;
    try {
      signal = ControlSignal.safeParse(JSON.parse(decoder.decode(data)));
    } catch {
      return;
    }
    if (!signal.success) return;
    const s = signal.data;
    if (s.type === 'control.opened') {
      const candidate = { id: s.control_id, startedAtMs: s.started_at };
      if (this.active !== null && this.active.id !== candidate.id && !isNewerAttachment(candidate, this.active)) return;
      const first = this.active?.id !== candidate.id;
      this.active = candidate;
      if (first) this.forward(this.deps.snapshot());
    } else if (s.type === 'control.closed' && this.active?.id === s.control_id) {
      this.active = null;
    }
  }

  private onClientEvent(data: Uint8Array): void {
    if (this.active === null) return;
    try {
      const e = this.codec.decode(Buffer.from(data.buffer, data.byteOffset, data.byteLength), false);
      if (e.type === 'refusal') {
        return this.forward({ type: 'error', code: e.code, message: e.message, clientEventId: e.eventId, wireParam: e.wireParam });
      }
      if (e.type === 'audio.append') {
        return this.forward({
          type: 'error',
          code: 'invalid_event',
          message: 'A control socket carries no audio: the media travels on the session’s own transport.',
          clientEventId: e.eventId,
          wireParam: 'type',
        });
      }
      this.deps.accept(e);
    } catch (err) {
      this.deps.log.warn({ err }, 'control event failed');
    }
  }

  private publish(subject: string, frame: string | Buffer): void {
    try {
      this.deps.bus.nc.publish(subject, typeof frame === 'string' ? encoder.encode(frame) : frame);
    } catch (err) {
      this.deps.log.warn({ err }, 'control publish failed');
    }
  }
}
