import type { CreateSessionRequest, VoiceSession } from '@s2s/contract';
import {
  authenticateKey,
  bearerToken,
  createSession as createCoreSession,
  errors,
  expiryCause,
  hashApiKey,
  isApiKeyShaped,
  loadOwnedSession,
  requestEnd,
  toVoiceSession,
  type SessionRecord,
} from '@s2s/core';
import type { AppContext } from '../context.js';

export interface CreateSessionInput {
  authorization: string | undefined;
  body: CreateSessionRequest;
  idempotencyKey?: string | undefined;
  traceId: string;
}

export interface CreateSessionResult {
  session: VoiceSession;
  /** True when an earlier request with the same Idempotency-Key made the session. */
  replayed: boolean;
}

/**
 * POST /v1/voice/sessions after the body is valid: core createSession checks, in one statement, key (401),
 * Idempotency-Key replay or conflict (201 replay / 409), model listed (404), wallet (402).
 */
export async function createSession({ ctx, input }: { ctx: AppContext; input: CreateSessionInput }): Promise<CreateSessionResult> {
  const secret = bearerToken(input.authorization);
  if (secret === null || !isApiKeyShaped(secret)) throw errors.invalidKey();
  const { session, replayed } = await createCoreSession({
    db: ctx.db,
    input: {
      key: { secretHash: hashApiKey(secret) },
      request: input.body,
      idempotencyKey: input.idempotencyKey,
      traceId: input.traceId,
    },
    settings: {
      preauthMinutes: ctx.config.sessionPreauthMinutes,
      idleTimeoutSeconds: ctx.config.sessionIdleTimeoutSeconds,
      maxSeconds: ctx.config.sessionMaxSeconds,
      syncCommit: ctx.config.sessionCreateSyncCommit,
    },
  });
  return { session: toVoiceSession(session, ctx.config.realtimePublicUrl), replayed };
}

/** Authenticates the caller only: used to answer 401 before a body error (api-v1: auth, then body). */
export async function checkApiKey({ ctx, input }: { ctx: AppContext; input: { authorization: string | undefined } }): Promise<void> {
  await authenticateKey(ctx.db.prisma, input.authorization);
}

function isExpired(s: SessionRecord): boolean {
  return s.status === 'expired' || s.terminalStatus === 'expired';
}

/**
 * GET /v1/voice/sessions/{id}: ownership first (core loadOwnedSession), then expiry. A read past the idle
 * or maximum deadline requests the end (billing settles it) and, like any expired session, answers 410.
 */
export async function getSession({
  ctx,
  input,
}: {
  ctx: AppContext;
  input: { authorization: string | undefined; sessionId: string };
}): Promise<VoiceSession> {
  const key = await authenticateKey(ctx.db.prisma, input.authorization);
  let session = await loadOwnedSession(ctx.db.prisma, input.sessionId, key.keyId);
  if (session.settledAt === null && session.endRequestedAt === null) {
    const cause = expiryCause(session, ctx.now());
    if (cause !== null) {
      const end = await requestEnd({ db: ctx.db, bus: ctx.bus }, session.id, cause, { now: ctx.now() });
      if (end?.terminalStatus === 'expired') throw errors.sessionExpired();
      // Another ending (or settlement) won the race: answer from what the store now says.
      session = await loadOwnedSession(ctx.db.prisma, input.sessionId, key.keyId);
    }
  }
  if (isExpired(session)) throw errors.sessionExpired();
  return toVoiceSession(session, ctx.config.realtimePublicUrl);
}
