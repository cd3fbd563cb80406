import type { Logger } from '@s2s/telemetry';
import { WebSocket } from 'ws';
import type { AgentSession } from '../agent/session.js';
import type { AttachmentContext } from './context.js';
import { TEXT_FRAME } from './client-socket.js';
import type { InternalServerEvent } from '../codecs/events.js';
import type { UpstreamEvent } from '../providers/shared/types.js';
import { REQUEST_ERRORS, type FinishReason } from '../realtime-errors.js';
import type { ResponseWaiter } from './response-waiter.js';
import type { ResponseTracker } from './responses.js';
import type { AttachmentTelemetry } from '../telemetry.js';
import type { UpstreamLink } from './upstream-link.js';

/** What an upstream event touches: the client socket, turn state, agent session, telemetry and the end. */
export interface UpstreamRoutes {
  ws: WebSocket;
  ctx: Pick<AttachmentContext, 'codec'>;
  link: UpstreamLink;
  tracker: ResponseTracker;
  agent: AgentSession;
  waiter: ResponseWaiter;
  trace: AttachmentTelemetry;
  log: Logger;
  send(e: InternalServerEvent): void;
  /** Ends the attachment with the reason's error event and close code. */
  fail(reason: FinishReason): void;
  /** Usage changed: the checkpoint flag and the budget screen. */
  usageChanged(): void;
}

/**
 * One upstream event, after activation: audio to the client (the hot path: one encode, no I/O), errors
 * and closes to the attachment's end, agent events to the agent session, the rest through the tracker.
 */
export function routeUpstreamEvent(r: UpstreamRoutes, e: UpstreamEvent): void {
  switch (e.type) {
    case 'audio_delta': {
      r.tracker.delta(e.responseId, e.audio.bytes);
      const place = r.agent.audioPlace(e);
      if (!r.link.finishing && r.ws.readyState === WebSocket.OPEN) {
        r.ws.send(r.ctx.codec.encode({ type: 'response.audio.delta', place, audio: e.audio }), TEXT_FRAME);
        r.trace.frameOut();
        r.trace.audioOut(place.responseId);
      }
      return r.usageChanged();
    }
    case 'audio_done':
      return r.send({ type: 'response.audio.done', ...r.agent.audioPlace(e) });
    case 'error':
      // The provider's own text may name the provider, a model or a URL: it goes to the log only.
      r.log.warn({ fatal: e.fatal, upstream_message: e.message }, 'upstream error');
      if (e.fatal) return r.fail('upstream_failure');
      if (r.agent.upstreamRefused(e)) return;
      r.tracker.requestFailed();
      r.send({ type: 'error', ...REQUEST_ERRORS.upstreamRefused });
      if (!r.tracker.expectingResponse) r.waiter.release();
      return;
    case 'closed':
      if (e.unexpected) {
        r.log.warn('upstream closed unexpectedly');
        r.fail('upstream_failure');
      }
      return r.waiter.release();
    default: {
      if (r.agent.isAgentUpstreamEvent(e)) return r.agent.upstream(e);
      const event = r.tracker.clientEventFor(e);
      if (event?.type === 'speech.started' || event?.type === 'speech.stopped') {
        event.itemId = r.agent.conversation.reserve('itemKey' in e ? e.itemKey : undefined);
      }
      if (event) r.send(event);
      if (event?.type === 'speech.stopped') r.trace.turnEnded();
      else if (event?.type === 'response.created') r.trace.responseCreated(event.responseId);
      if (e.type !== 'response_done') return;
      if (event?.type === 'response.done') r.trace.responseDone(event.responseId, event.status, event.usage);
      r.usageChanged();
      return r.waiter.release();
    }
  }
}
