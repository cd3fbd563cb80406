import { Router } from 'express';
import { subscribeMessages } from '@s2s/bus';
import { EndSessionRequest, type EndCause, type EndReason, type VoiceSession } from '@s2s/contract';
import {
  AppError,
  authenticateKey,
  causeForEndReason,
  expiryCause,
  isAppError,
  loadOwnedSession,
  requestEnd,
  toVoiceSession,
  type SessionRecord,
} from '@s2s/core';
import { isStoreUnavailableError } from '@s2s/db';
import type { AppContext } from '../context.js';
import { readJsonBody } from '../http/body.js';

/** How often a waiting end request also reads the store, in case the settled message was missed. */
const SETTLED_POLL_MS = 500;

const terminationFailed = () =>
  new AppError(
    'session_termination_failed',
    'The session could not be settled in time. It will still be settled exactly once; retry the request to read its terminal state.',
  );

const storeUnavailable = (cause: unknown) =>
  new AppError('session_store_unavailable', 'The session store is unavailable; retry later.', { cause });

/** POST /v1/voice/sessions/{id}/end; mounted at /v1/voice/sessions. */
export function sessionEndRouter(ctx: AppContext): Router {
  const router = Router();
  router.post('/:id/end', async (req, res) => {
    try {
      // api-v1 order: the key, then ownership, then the body.
      const session = await ownedSession({ ctx, input: { authorization: req.headers.authorization, sessionId: req.params.id } });
      const body = readJsonBody(req, res, EndSessionRequest, { optional: true });
      res.json(await endSession({ ctx, input: { session, reason: body.reason } }));
    } catch (err) {
      throw !isAppError(err) && isStoreUnavailableError(err) ? storeUnavailable(err) : err;
    }
  });
  return router;
}

export async function ownedSession({
  ctx,
  input,
}: {
  ctx: AppContext;
  input: { authorization: string | undefined; sessionId: string };
}): Promise<SessionRecord> {
  const key = await authenticateKey(ctx.db.prisma, input.authorization);
  return loadOwnedSession(ctx.db.prisma, input.sessionId, key.keyId);
}

/**
 * Ends an owned session and answers its settled terminal resource. The end is recorded (first cause wins)
 * and announced; billing settles it once the relay's final usage is in or its grace runs out. A repeat,
 * or a session already settled, answers the same resource and changes nothing.
 */
export async function endSession({
  ctx,
  input,
}: {
  ctx: AppContext;
  input: { session: SessionRecord; reason: EndReason | undefined };
}): Promise<VoiceSession> {
  const { session } = input;
  if (session.settledAt) return toVoiceSession(session, ctx.config.realtimePublicUrl);
  // A session already past its deadline ends as expired whatever the client says (decisions.md).
  const requested = causeForEndReason(input.reason);
  const cause = expiryCause(session, ctx.now()) ?? requested;

  let settledMessage!: () => void;
  const settledByBus = new Promise<void>((resolve) => (settledMessage = resolve));
  // Subscribed before the end is requested, so the settlement cannot be announced before we listen.
  const sub = subscribeMessages(ctx.bus.nc, ctx.bus.subjects.settled(session.id), (m) => {
    if (m.type === 'session.settled' && m.session_id === session.id) settledMessage();
  });
  try {
    if (session.endRequestedAt === null) await recordEnd(ctx, session.id, cause, requested);
    const deadline = Date.now() + ctx.config.endWaitMs;
    for (;;) {
      if (await isSettled(ctx, session.id)) break;
      const left = deadline - Date.now();
      if (left <= 0) throw terminationFailed();
      const bus = await Promise.race([settledByBus.then(() => true), delay(Math.min(SETTLED_POLL_MS, left)).then(() => false)]);
      if (bus) break;
    }
  } finally {
    sub.unsubscribe();
  }
  const settled = await loadOwnedSession(ctx.db.prisma, session.id, session.keyId);
  if (!settled.settledAt) throw terminationFailed();
  return toVoiceSession(settled, ctx.config.realtimePublicUrl);
}

/**
 * requestEnd commits the end before it publishes. A failed publish after the commit is not the caller's
 * problem: the billing sweeper re-announces recorded ends, so we keep waiting for the settlement.
 */
async function recordEnd(ctx: AppContext, sessionId: string, cause: EndCause, requested: EndCause): Promise<void> {
  try {
    const deps = { db: ctx.db, bus: ctx.bus };
    const end = await requestEnd(deps, sessionId, cause, { now: ctx.now() });
    // An expiry that activity undid under the lock: end it for the client's own reason instead.
    if (end === null && cause !== requested) await requestEnd(deps, sessionId, requested, { now: ctx.now() });
  } catch (err) {
    if (isStoreUnavailableError(err)) throw err;
    const { rows } = await ctx.db.pool.query<{ recorded: boolean }>(
      'SELECT end_requested_at IS NOT NULL AS recorded FROM voice_sessions WHERE id = $1',
      [sessionId],
    );
    if (!rows[0]?.recorded) throw err;
    ctx.logger.warn({ err, session_id: sessionId }, 'end request recorded but not announced; the sweeper will re-announce it');
  }
}

async function isSettled(ctx: AppContext, sessionId: string): Promise<boolean> {
  try {
    const { rows } = await ctx.db.pool.query<{ settled: boolean }>(
      'SELECT settled_at IS NOT NULL AS settled FROM voice_sessions WHERE id = $1',
      [sessionId],
    );
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
