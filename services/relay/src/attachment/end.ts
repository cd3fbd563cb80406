import type { Logger } from '@s2s/telemetry';
import type { WebSocket } from 'ws';
import type { AttachmentContext } from './context.js';
import type { CheckpointTicket } from '../metering/checkpoints.js';
import { closeSocket } from './client-socket.js';
import type { BudgetScreen } from '../metering/budget-screen.js';
import { answerForFinish, type FinishReason } from '../realtime-errors.js';
import type { ResponseWaiter } from './response-waiter.js';
import type { ResponseTracker } from './responses.js';
import type { UpstreamLink } from './upstream-link.js';

/** The close waits this long for the final checkpoint; past it the socket closes and publishing goes on. */
const FINAL_BEFORE_CLOSE_MS = 2000;

/** The causes with which the relay itself ends a session. */
export type RelayEndCause = 'budget_exhausted' | 'upstream_failure' | 'client_closed';

/** What the end of one attachment touches. */
export interface EndParts {
  ctx: Pick<AttachmentContext, 'config' | 'checkpoints'>;
  ws: WebSocket;
  link: UpstreamLink;
  tracker: ResponseTracker;
  screen: BudgetScreen;
  waiter: ResponseWaiter;
  ticket: CheckpointTicket;
  log: Logger;
  endSession(cause: RelayEndCause): Promise<void>;
}

/**
 * The attachment's end, after its link stopped (run once; the first reason wins): end the session when the
 * reason does, let a client that left mid-answer still be billed for the answer, close the upstream, publish
 * the final checkpoint, then close the socket with the reason's code.
 */
export async function runFinish(p: EndParts, reason: FinishReason, legacy: boolean): Promise<void> {
  let final: Promise<void> | null = null;
  try {
    if (reason === 'budget_exhausted' || reason === 'upstream_failure') await p.endSession(reason);
    const up = await p.link.settled();
    if (up && (reason === 'client_closed' || reason === 'hangup') && p.tracker.expectingResponse && !p.screen.exhausted) {
      await p.waiter.wait(p.ctx.config.RESPONSE_GRACE_MS);
    }
    await p.link.close(up);
    // Retried until the bus takes it; the client is not kept waiting for a bus outage.
    final = p.ctx.checkpoints.publishFinal(p.ticket);
    await settledWithin(final, FINAL_BEFORE_CLOSE_MS);
  } catch (err) {
    p.log.error({ err }, 'attachment finish failed');
  }
  const close = answerForFinish(reason).close;
  if (close) closeSocket(p.ws, close);
  if (final) await final;
  // A legacy socket is its session: closing it ends the session, unless a newer attachment took over.
  if (legacy && reason !== 'replaced') await p.endSession('client_closed');
}

/** Waits for `p` to settle, at most `ms`; never rejects. */
function settledWithin(p: Promise<unknown>, ms: number): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    const done = () => {
      clearTimeout(timer);
      resolve();
    };
    p.then(done, done);
  });
}
