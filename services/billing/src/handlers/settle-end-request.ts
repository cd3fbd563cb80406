import { ACK, retryDelayMs, isLastDelivery, type Outcome } from '@s2s/bus';
import type { SessionEndRequested } from '@s2s/contract';
import { isStoreUnavailableError } from '@s2s/db';
import { upForMs } from '../availability.js';
import { decideEnd, relayState } from '../decide.js';
import { foldCheckpoints } from '../fold.js';
import { readEndedSession } from '../leases.js';
import { readSessionCheckpoints } from '../stream-usage.js';
import { storeCheckpoints } from '../usage-store.js';
import type { BillingContext } from './context.js';
import { settleAndAnnounce } from './settle-and-announce.js';

export interface EndRequestDelivery {
  end: SessionEndRequested;
  /** JetStream delivery count of the end message (1 on the first). */
  deliveryCount: number;
  /** When the end message entered the stream: the announcement the live-relay wait is counted from. */
  announcedAt: Date;
}

/**
 * The end-request handler: settles an ended session once every attachment is final, once the relays
 * still owing a final are gone and the grace has run out, or at the bound of the wait for a live relay
 * (docs/billing.md, "Waiting for finals"). Until then it answers `wait` with the delay to look again.
 */
export async function settleEndRequest({ ctx, input }: { ctx: BillingContext; input: EndRequestDelivery }): Promise<Outcome> {
  const sessionId = input.end.session_id;
  const view = await readEndedSession(ctx.db.pool, sessionId);
  if (!view) {
    ctx.counters.unknownSession++;
    ctx.log.warn({ session_id: sessionId }, 'end request for an unknown session acknowledged');
    return ACK;
  }
  if (!view.endRequestedAt) {
    ctx.log.error({ session_id: sessionId }, 'end message without a recorded end request; acknowledged');
    return ACK;
  }
  const now = ctx.now();
  const storeUpFor = upForMs(ctx.store, now);
  const outages = [ctx.store.upSince(), ctx.busLink.upSince()].map((d) => d?.getTime() ?? now.getTime());
  const decision = decideEnd({
    settled: view.settled,
    pending: view.pending.map((p) => relayState(p, storeUpFor, ctx.endWait.leaseTtlMs)),
    endRequestedAt: view.endRequestedAt,
    liveWaitFrom: new Date(Math.max(input.announcedAt.getTime(), ...outages)),
    now,
    graceMs: ctx.endWait.graceMs,
    liveMaxWaitMs: ctx.endWait.liveMaxWaitMs,
    recheckMs: ctx.endWait.leaseTtlMs,
    deliveryCount: input.deliveryCount,
    maxDeliver: ctx.endWait.maxDeliver,
  });
  if (decision.action === 'wait') return { kind: 'wait', delayMs: decision.delayMs };
  if (decision.action === 'settle') {
    // Also when every known attachment is final: an attachment whose row a lost checkpoint would create.
    await foldFromStream(ctx, sessionId);
    if (decision.reason === 'live_wait_exceeded' || decision.reason === 'last_delivery') {
      const live = view.pending.filter((p) => p.exists && p.unexpired).map((p) => ({ attachment_id: p.attachmentId, relay_id: p.relayId }));
      if (live.length > 0) {
        ctx.counters.settledOnLiveBound++;
        ctx.log.error({ session_id: sessionId, reason: decision.reason, live }, 'settling without the final checkpoint of a live relay');
      }
    }
  }
  const { result, announced } = await settleAndAnnounce({ ctx, input: { sessionId } });
  if (result.outcome === 'not_found' || result.outcome === 'not_requested') return ACK;
  if (announced || isLastDelivery(input.deliveryCount, ctx.endWait.maxDeliver)) return ACK;
  return { kind: 'wait', delayMs: retryDelayMs(input.deliveryCount, ctx.endWait.retryBaseMs, ctx.endWait.retryMaxMs) };
}

/** Before settling on an end request: fold whatever the stream holds for the session (idempotent). */
async function foldFromStream(ctx: BillingContext, sessionId: string): Promise<void> {
  const checkpoints = await readSessionCheckpoints(ctx.bus, sessionId);
  if (checkpoints.length === 0) return;
  const newest = [...foldCheckpoints(checkpoints).values()];
  let advanced = 0;
  try {
    advanced = (await storeCheckpoints({ ctx, input: { newest } })).advanced;
  } catch (err) {
    if (isStoreUnavailableError(err)) throw err;
    // One attachment at a time, so a poison checkpoint (dead-lettered on its own) blocks nothing else.
    for (const c of newest) {
      try {
        advanced += (await storeCheckpoints({ ctx, input: { newest: [c] } })).advanced;
      } catch (one) {
        if (isStoreUnavailableError(one)) throw one;
        ctx.log.error(
          { err: one, session_id: sessionId, attachment_id: c.attachment_id },
          'checkpoint from the stream could not be stored',
        );
      }
    }
  }
  if (advanced > 0) {
    ctx.counters.recovered += advanced;
    ctx.log.warn({ session_id: sessionId, attachments: advanced }, 'usage not yet folded recovered from the stream before settling');
  }
}
