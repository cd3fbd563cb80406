import { subscribeMessages } from '@s2s/bus';
import type { EndCause, EndReason } from '@s2s/contract';
import { causeForEndReason, errors, type SessionRecord } from '@s2s/core';
import { isStoreUnavailableError, sqlStatement } from '@s2s/db';
import { z } from 'zod';
import type { SessionsContext } from './context.js';
import { expireIfDue } from './expire-if-due.js';
import { loadOwnedSession } from './get.js';
import { requestEnd } from './request-end.js';

/** How often a waiting end request also reads the store, in case the settled message was missed. */
const SETTLED_POLL_MS = 500;

const END_RECORDED = sqlStatement(import.meta.url, {
  text: 'SELECT end_requested_at IS NOT NULL AS recorded FROM voice_sessions WHERE id = $1',
  row: z.object({ recorded: z.boolean() }),
});

const SETTLED = sqlStatement(import.meta.url, {
  text: 'SELECT settled_at IS NOT NULL AS settled FROM voice_sessions WHERE id = $1',
  row: z.object({ settled: z.boolean() }),
});

/**
 * Ends an owned session and returns it settled. The end is recorded (first cause wins) and announced;
 * billing settles it once the relay's final usage is in or its grace runs out. A repeat, or a session
 * already settled, returns the same session and changes nothing. Not settled within `waitMs`: 409.
 */
export async function endAndWait({
  ctx,
  input,
}: {
  ctx: SessionsContext;
  input: { session: SessionRecord; reason: EndReason | undefined; waitMs: number };
}): Promise<SessionRecord> {
  const { session } = input;
  if (session.settledAt) return session;

  let settledMessage!: () => void;
  const settledByBus = new Promise<void>((resolve) => (settledMessage = resolve));
  // Subscribed before the end is requested, so the settlement cannot be announced before we listen.
  const sub = subscribeMessages(ctx.bus.nc, ctx.bus.subjects.settled(session.id), (m) => {
    if (m.type === 'session.settled' && m.session_id === session.id) settledMessage();
  });
  try {
    if (session.endRequestedAt === null) await recordEnd(ctx, session, causeForEndReason(input.reason));
    const deadline = Date.now() + input.waitMs;
    for (;;) {
      if (await isSettled(ctx, session.id)) break;
      const left = deadline - Date.now();
      if (left <= 0) throw errors.sessionTerminationFailed();
      const bus = await Promise.race([settledByBus.then(() => true), delay(Math.min(SETTLED_POLL_MS, left)).then(() => false)]);
      if (bus) break;
    }
  } finally {
    sub.unsubscribe();
  }
  const settled = await loadOwnedSession({ ctx, input: { sessionId: session.id, keyId: session.keyId } });
  if (!settled.settledAt) throw errors.sessionTerminationFailed();
  return settled;
}

/**
 * A session already past its deadline ends as expired whatever the client says (decisions.md); an expiry
 * that activity undid under the lock ends for the client's own reason. requestEnd commits before it
 * publishes: a failed publish after the commit is not the caller's problem, the sweeper re-announces it.
 */
async function recordEnd(ctx: SessionsContext, session: SessionRecord, requested: EndCause): Promise<void> {
  try {
    const { end } = await expireIfDue({ ctx, input: { session } });
    if (end === null) await requestEnd({ ctx, input: { sessionId: session.id, cause: requested } });
  } catch (err) {
    if (isStoreUnavailableError(err)) throw err;
    const { rows } = await END_RECORDED.run(ctx.db.pool, [session.id]);
    if (!rows[0]?.recorded) throw err;
    ctx.log?.warn({ err, session_id: session.id }, 'end request recorded but not announced; the sweeper will re-announce it');
  }
}

async function isSettled(ctx: SessionsContext, sessionId: string): Promise<boolean> {
  try {
    const { rows } = await SETTLED.run(ctx.db.pool, [sessionId]);
    return rows[0]?.settled === true;
  } catch (err) {
    // A blip while waiting is not fatal: the bus may still tell us, and the final read decides.
    if (isStoreUnavailableError(err)) return false;
    throw err;
  }
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
