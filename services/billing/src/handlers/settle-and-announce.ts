import { settleSession, settledMessage, type SettleOutcome } from '../settle.js';
import type { BillingContext } from './context.js';

/**
 * Settles one ended session (idempotent: an earlier settlement is answered as it was) and publishes
 * `session.settled`. `announced` is false when that publish failed: the caller retries the announcement.
 */
export async function settleAndAnnounce({
  ctx,
  input,
}: {
  ctx: BillingContext;
  input: { sessionId: string };
}): Promise<{ result: SettleOutcome; announced: boolean }> {
  return ctx.telemetry.settle(input.sessionId, () => settleIn(ctx, input.sessionId));
}

async function settleIn(ctx: BillingContext, sessionId: string): Promise<{ result: SettleOutcome; announced: boolean }> {
  const result = await settleSession({ ctx, input: { sessionId } });
  if (result.outcome === 'not_found' || result.outcome === 'not_requested') return { result, announced: true };
  if (result.outcome === 'settled') {
    ctx.faults?.afterSettleCommit?.();
    ctx.counters.settled++;
    ctx.log.info(
      { session_id: sessionId, status: result.settlement.status, billed_cents: result.settlement.billedCents, usage: result.usage },
      'session settled',
    );
  }
  // Re-announcing an earlier settlement covers a publish lost to a crash between commit and publish.
  try {
    await ctx.bus.publish(ctx.bus.subjects.settled(sessionId), settledMessage(result.settlement), `settled:${sessionId}`);
    return { result, announced: true };
  } catch (err) {
    ctx.log.warn({ err, session_id: sessionId }, 'session.settled publish failed');
    return { result, announced: false };
  }
}
