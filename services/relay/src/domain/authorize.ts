import type { Bus } from '@s2s/bus';
import { SESSION_MODE } from '@s2s/contract';
import {
  authenticateKey,
  createSession,
  errors,
  expiryCause,
  isTerminal,
  loadOwnedSession,
  newTraceId,
  requestEnd,
  type SessionRecord,
  type SessionSettings,
} from '@s2s/core';
import type { DbHandle } from '@s2s/db';
import type { Logger } from '@s2s/telemetry';

export interface AuthorizeContext {
  db: DbHandle;
  bus: Bus;
  logger: Logger;
  sessionSettings: SessionSettings;
  now: () => Date;
  traceId: () => string | undefined;
}

export type AttachTarget = { sessionId: string } | { model: string };

export interface AuthorizedAttach {
  session: SessionRecord;
  legacy: boolean;
}

/**
 * Everything decided before the upgrade (api-v1 §4 rule 5): the key (401), the session and its owner
 * (404/401), whether it can still be attached (410); or, on the legacy alias, a new session created exactly
 * like `POST /v1/voice/sessions` (401/404/402). An invalid key gets past nothing, so it creates nothing.
 */
export async function authorizeAttach({
  ctx,
  input,
}: {
  ctx: AuthorizeContext;
  input: { authorization: string | undefined; target: AttachTarget };
}): Promise<AuthorizedAttach> {
  const key = await authenticateKey(ctx.db.prisma, input.authorization);
  if ('model' in input.target) {
    const { session } = await createSession({
      db: ctx.db,
      input: {
        key,
        request: { model: input.target.model, mode: SESSION_MODE },
        legacy: true,
        traceId: ctx.traceId() ?? newTraceId(),
      },
      settings: ctx.sessionSettings,
    });
    return { session, legacy: true };
  }

  const session = await loadOwnedSession(ctx.db.prisma, input.target.sessionId, key.keyId);
  if (isTerminal(session.status) || session.settledAt !== null || session.endRequestedAt !== null) {
    throw errors.sessionExpired();
  }
  const cause = expiryCause(session, ctx.now());
  if (cause !== null) {
    // Past its deadline but not yet swept: end it now, as a read of it would.
    await requestEnd({ db: ctx.db, bus: ctx.bus }, session.id, cause, { now: ctx.now() }).catch((err: unknown) =>
      ctx.logger.warn({ err, session_id: session.id }, 'end request of an expired session failed'),
    );
    throw errors.sessionExpired();
  }
  return { session, legacy: false };
}
