import type { RawData } from 'ws';
import type { AgentSession } from '../agent/session.js';
import type { ClientCodec, InternalClientEvent, InternalServerEvent, TransportSignal } from '../codecs/events.js';
import type { BudgetScreen } from '../metering/budget-screen.js';
import type { MeteredUpstream } from '../providers/shared/types.js';
import { REQUEST_ERRORS } from '../realtime-errors.js';
import type { AttachmentTelemetry } from '../telemetry.js';
import { AbuseWindow } from './abuse.js';
import type { ResponseTracker } from './responses.js';
import type { UpstreamLink } from './upstream-link.js';

type ErrorCode = Extract<InternalServerEvent, { type: 'error' }>['code'];

/** What the client's direction touches of the attachment. */
export interface ClientToUpstreamDeps {
  codec: ClientCodec;
  link: UpstreamLink;
  screen: BudgetScreen;
  tracker: ResponseTracker;
  agent: AgentSession;
  trace: AttachmentTelemetry;
  /** The first accepted input activates a `ready` session (Activation). */
  inputAccepted(): void;
  /** What a transport reports beside client events (a phone stream's DTMF digit or hangup). */
  signal(s: TransportSignal): void;
  send(e: InternalServerEvent): void;
  exhaustBudget(): void;
  /** More than the abuse window allows: the attachment closes (1008). */
  abusive(): void;
  /** A bug or an unexpected failure: the attachment ends. */
  crash(err: unknown): void;
}

/**
 * Client → upstream: a frame is decoded by the dialect's codec, refused (counted by the abuse window) or
 * handed to the link, which applies it once the upstream is open. The append is the hot path: a budget
 * screen, the forward and a count; input that would take the cost past the preauthorization is never forwarded.
 */
export class ClientToUpstream {
  private readonly abuse = new AbuseWindow();
  /** Client events ws delivered (logged at the attachment's end, beside the input metered). */
  framesIn = 0;

  constructor(private readonly d: ClientToUpstreamDeps) {}

  readonly onMessage = (data: RawData, isBinary: boolean): void => {
    this.framesIn++;
    const { d } = this;
    if (d.link.finishing) return;
    d.trace.frameIn();
    try {
      const e = d.codec.decode(data as Buffer, isBinary);
      if (e === null) return;
      if (e.type === 'refusal') return this.refuse(e.code, e.message, e.eventId, undefined, e.wireParam);
      if (e.type === 'dtmf' || e.type === 'hangup') return d.signal(e);
      this.accept(e);
    } catch (err) {
      d.crash(err);
    }
  };

  /** A client event, from the client, its control socket, or a codec acting for its client. */
  readonly accept = (e: InternalClientEvent): void => {
    const { d } = this;
    if (d.link.finishing) return;
    if (e.type === 'audio.append') d.inputAccepted();
    d.link.accept(e);
  };

  /** An error event for one client event; the socket stays open unless the client keeps doing it. */
  refuse(code: ErrorCode, message: string, clientEventId: string | undefined, param?: string, wireParam?: string): void {
    this.d.send({ type: 'error', code, message, clientEventId, param, wireParam });
    if (this.abuse.record(Date.now())) this.d.abusive();
  }

  /** One decoded client event for the open upstream, in the client's order (the link calls it). */
  apply(e: InternalClientEvent, up: MeteredUpstream): void {
    const { d } = this;
    if (d.screen.exhausted) return;
    switch (e.type) {
      case 'audio.append': {
        const state = d.screen.admitInput(up.meter.usageNow(), e.audio.pcm16Bytes);
        if (state === 'over') return d.exhaustBudget();
        if (state === 'exhausted') return;
        up.appendAudio(e.audio);
        d.tracker.appended(e.audio.pcm16Bytes);
        if (state === 'reached') d.exhaustBudget();
        return;
      }
      case 'input.commit':
        // An empty buffer is answered here: no upstream round trip, no response expected.
        if (!d.tracker.commit()) return this.refuse(REQUEST_ERRORS.commitEmpty.code, REQUEST_ERRORS.commitEmpty.message, e.eventId);
        d.trace.turnEnded();
        return up.commit();
      case 'input.clear':
        d.tracker.cleared();
        up.clear();
        return d.send({ type: 'input.cleared' });
      case 'response.create':
        if (!d.agent.handle(e, up)) return;
        d.tracker.createRequested();
        d.trace.turnEnded();
        return;
      case 'response.cancel': {
        const target = d.tracker.cancel();
        if (target === null) return this.refuse(REQUEST_ERRORS.cancelNotActive.code, REQUEST_ERRORS.cancelNotActive.message, e.eventId);
        return up.cancelResponse(target.upstreamId, target.playedMs);
      }
      default:
        d.agent.handle(e, up);
    }
  }
}
