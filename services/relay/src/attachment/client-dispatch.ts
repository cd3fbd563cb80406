import type { AgentSession } from '../agent/session.js';
import type { InternalClientEvent, InternalServerEvent } from '../codecs/events.js';
import type { BudgetScreen } from '../metering/budget-screen.js';
import type { MeteredUpstream } from '../providers/shared/types.js';
import { REQUEST_ERRORS } from '../realtime-errors.js';
import type { ResponseTracker } from './responses.js';
import type { AttachmentTelemetry } from '../telemetry.js';

/** What a client event touches: the attachment's budget screen, turn state, agent session and answers. */
export interface ClientDispatch {
  screen: BudgetScreen;
  tracker: ResponseTracker;
  agent: AgentSession;
  trace: AttachmentTelemetry;
  send(e: InternalServerEvent): void;
  /** An error event for one client event (counted by the abuse window). */
  refuse(code: (typeof REQUEST_ERRORS)[keyof typeof REQUEST_ERRORS]['code'], message: string, clientEventId: string | undefined): void;
  exhaustBudget(): void;
}

/**
 * One decoded client event for the open upstream. The append is the hot path: a budget screen, the
 * forward and a count; input that would take the cost past the preauthorization is never forwarded.
 */
export function applyClientEvent(d: ClientDispatch, up: MeteredUpstream, e: InternalClientEvent): void {
  if (d.screen.exhausted) return;
  switch (e.type) {
    case 'audio.append': {
      const state = d.screen.admitInput(up.usageNow(), e.audio.bytes);
      if (state === 'over') return d.exhaustBudget();
      if (state === 'exhausted') return;
      up.appendAudio(e.audio);
      d.tracker.appended(e.audio.bytes);
      if (state === 'reached') d.exhaustBudget();
      return;
    }
    case 'input.commit':
      // An empty buffer is answered here: no upstream round trip, no response expected.
      if (!d.tracker.commit()) return d.refuse(REQUEST_ERRORS.commitEmpty.code, REQUEST_ERRORS.commitEmpty.message, e.eventId);
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
      if (target === null) return d.refuse(REQUEST_ERRORS.cancelNotActive.code, REQUEST_ERRORS.cancelNotActive.message, e.eventId);
      return up.cancelResponse(target.upstreamId, target.playedMs);
    }
    default:
      d.agent.handle(e, up);
  }
}
