import type { Bus } from '@s2s/bus';
import { SESSION_MODE } from '@s2s/contract';
import { errors, isTerminal, newTraceId, type SessionRecord } from '@s2s/core';
import type { DbHandle } from '@s2s/db';
import { authenticateKey, createSession, expireIfDue, loadOwnedSession, type SessionSettings } from '@s2s/sessions';
import type { Logger } from '@s2s/telemetry';

export interface AuthorizeContext {
  db: DbHandle;
  bus: Bus;
  log: Logger;
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
  const key = await authenticateKey({ ctx, input: { authorization: input.authorization } });
  if ('model' in input.target) {
    const { session } = await createSession({
      ctx,
      input: {
        key,
        request: { model: input.target.model, mode: SESSION_MODE },
        legacy: true,
        traceId: ctx.traceId() ?? newTraceId(),
        settings: ctx.sessionSettings,
      },
    });
    return { session, legacy: true };
  }

  const session = await loadOwnedSession({ ctx, input: { sessionId: input.target.sessionId, keyId: key.keyId } });
  if (isTerminal(session.status) || session.settledAt !== null || session.endRequestedAt !== null) {
    throw errors.sessionExpired();
  }
  // Past its deadline but not yet swept: end it now, as a read of it would.
  // A failed end request (only tried when one was due) still refuses: the sweeper ends it later.
  const outcome = await expireIfDue({ ctx, input: { session } }).catch((err: unknown) => {
    ctx.log.warn({ err, session_id: session.id }, 'end request of an expired session failed');
    return null;
  });
  if (outcome === null || outcome.due !== null) throw errors.sessionExpired();
  return { session, legacy: false };
}
