import type { Logger } from '@s2s/telemetry';
import { WebSocket } from 'ws';
import type { AgentSession } from '../agent/session.js';
import type { ClientCodec, InternalServerEvent } from '../codecs/events.js';
import type { BudgetScreen } from '../metering/budget-screen.js';
import type { UpstreamEvent } from '../providers/shared/types.js';
import { REQUEST_ERRORS, type FinishReason } from '../realtime-errors.js';
import type { AttachmentTelemetry } from '../telemetry.js';
import { FormatConverter } from '../audio.js';
import { Activation } from './activation.js';
import { sendText } from './client-socket.js';
import type { ResponseWaiter } from './response-waiter.js';
import type { ResponseTracker } from './responses.js';
import type { UpstreamLink } from './upstream-link.js';

/** What the upstream's direction touches of the attachment. */
export interface UpstreamToClientDeps {
  ws: WebSocket;
  codec: ClientCodec;
  link: UpstreamLink;
  screen: BudgetScreen;
  tracker: ResponseTracker;
  agent: AgentSession;
  waiter: ResponseWaiter;
  trace: AttachmentTelemetry;
  log: Logger;
  /** Whether the session is already past `ready` (nothing to activate). */
  active: boolean;
  /** Stores ready → active (Activation retries it while the attachment lives). */
  storeActivation(): Promise<unknown>;
  alive(): boolean;
  send(e: InternalServerEvent): void;
  /** Ends the attachment with the reason's error event and close code. */
  fail(reason: FinishReason): void;
  exhaustBudget(): void;
  /** A bug or an unexpected failure: the attachment ends. */
  crash(err: unknown): void;
}

/**
 * Upstream → client: events are held until a first input's activation is stored (Activation), then audio
 * goes to the client (the hot path: one encode, no I/O), errors and closes to the attachment's end, agent
 * events to the agent session, the rest through the tracker; every usage change is screened.
 */
export class UpstreamToClient {
  private readonly activation: Activation<UpstreamEvent>;
  /** The upstream's output audio in the client's format, where they differ (stateful: the rate change). */
  private readonly toClient = new FormatConverter();

  constructor(private readonly d: UpstreamToClientDeps) {
    this.activation = new Activation<UpstreamEvent>(d.active, {
      store: d.storeActivation,
      deliver: (e) => this.route(e),
      alive: d.alive,
      log: d.log,
    });
  }

  /** The first accepted input of a `ready` session (the client's direction calls it). */
  inputAccepted(): void {
    this.activation.inputAccepted();
  }

  /** The upstream's event callback. */
  readonly onEvent = (e: UpstreamEvent): void => {
    try {
      this.activation.pass(e);
    } catch (err) {
      this.d.crash(err);
    }
  };

  /** Usage changed (input forwarded, output delivered, a response settled): the checkpoint flag and the budget screen. */
  usageChanged(): void {
    if (this.d.screen.changed(this.d.link.current?.meter.usageNow() ?? null)) this.d.exhaustBudget();
  }

  private route(e: UpstreamEvent): void {
    const { d } = this;
    switch (e.type) {
      case 'audio_delta': {
        d.tracker.delta(e.responseId, e.audio.pcm16Bytes);
        const place = d.agent.audioPlace(e);
        if (!d.link.finishing && d.ws.readyState === WebSocket.OPEN) {
          // In the upstream connection's format: the client's, or converted to it here (the relay's one converter).
          const audio = this.toClient.to(e.audio, d.codec.outputFormat?.() ?? 'pcm16');
          sendText(d.ws, d.codec.encode({ type: 'response.audio.delta', place, audio }));
          d.trace.frameOut();
          d.trace.audioOut(place.responseId);
        }
        return this.usageChanged();
      }
      case 'audio_done':
        return d.send({ type: 'response.audio.done', ...d.agent.audioPlace(e) });
      case 'error':
        // The provider's own text may name the provider, a model or a URL: it goes to the log only.
        d.log.warn({ fatal: e.fatal, upstream_message: e.message }, 'upstream error');
        if (e.fatal) return d.fail('upstream_failure');
        if (d.agent.upstreamRefused(e)) return;
        d.tracker.requestFailed();
        d.send({ type: 'error', ...REQUEST_ERRORS.upstreamRefused });
        if (!d.tracker.expectingResponse) d.waiter.release();
        return;
      case 'closed':
        if (e.unexpected) {
          d.log.warn('upstream closed unexpectedly');
          d.fail('upstream_failure');
        }
        return d.waiter.release();
      default: {
        if (d.agent.isAgentUpstreamEvent(e)) return d.agent.upstream(e);
        const event = d.tracker.clientEventFor(e);
        if (event?.type === 'speech.started' || event?.type === 'speech.stopped') {
          event.itemId = d.agent.conversation.reserve('itemKey' in e ? e.itemKey : undefined);
        }
        if (event) d.send(event);
        if (event?.type === 'speech.stopped') d.trace.turnEnded();
        else if (event?.type === 'response.created') d.trace.responseCreated(event.responseId);
        if (e.type !== 'response_done') return;
        if (event?.type === 'response.done') d.trace.responseDone(event.responseId, event.status, event.usage);
        this.usageChanged();
        return d.waiter.release();
      }
    }
  }
}
