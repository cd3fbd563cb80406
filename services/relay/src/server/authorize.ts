import type { Bus } from '@s2s/bus';
import { SESSION_MODE } from '@s2s/contract';
import { errors, isTerminal, newTraceId, type SessionRecord } from '@s2s/core';
import type { DbHandle } from '@s2s/db';
import { authenticateClientSecret, authenticateKey, createSession, expireIfDue, loadOwnedSession, type SessionPolicy } from '@s2s/sessions';
import type { Logger } from '@s2s/telemetry';
import type { Credential } from './handshake.js';

export interface AuthorizeContext {
  db: DbHandle;
  bus: Bus;
  log: Logger;
  /** The deployment's session policy (preauthorization, idle timeout, max length), not the voice settings. */
  sessionPolicy: SessionPolicy;
  now: () => Date;
  traceId: () => string | undefined;
}

export type AttachTarget = { sessionId: string } | { model: string };

export interface AuthorizedAttach {
  session: SessionRecord;
  /** The legacy alias created this session (answered with `Deprecation: true`). */
  legacy: boolean;
}

/**
 * Everything decided before the upgrade (api-v1 §4 rule 5): the credential (401), the session and its owner
 * (404/401), whether it can still be attached (410); or, on the legacy alias with an API key, a new session
 * created exactly like `POST /v1/voice/sessions` (401/404/402). An invalid credential gets past nothing, so it
 * creates nothing. A client secret attaches only the session it was minted for (on the legacy alias, the
 * `model` must be that session's) and creates nothing.
 */
export async function authorizeAttach({
  ctx,
  input,
}: {
  ctx: AuthorizeContext;
  input: { credential: Credential; target: AttachTarget };
}): Promise<AuthorizedAttach> {
  const { credential, target } = input;
  if (credential.kind === 'client_secret') {
    const minted = await authenticateClientSecret({ ctx, input: { secret: credential.secret, now: ctx.now() } });
    if ('sessionId' in target && target.sessionId !== minted.sessionId) throw errors.invalidClientSecret();
    const session = await attachable(ctx, minted.sessionId, minted.keyId);
    if ('model' in target && target.model !== session.modelId) {
      throw errors.invalidRequest('The model is not the one of the session this client secret was minted for.');
    }
    return { session, legacy: false };
  }

  const key = await authenticateKey({ ctx, input: { authorization: credential.authorization } });
  if ('model' in target) {
    const { session } = await createSession({
      ctx,
      input: {
        key,
        request: { model: target.model, mode: SESSION_MODE },
        legacy: true,
        traceId: ctx.traceId() ?? newTraceId(),
        policy: ctx.sessionPolicy,
      },
    });
    return { session, legacy: true };
  }
  return { session: await attachable(ctx, target.sessionId, key.keyId), legacy: false };
}

/** The session `keyId` owns, if it can still be attached (410 otherwise). */
export async function attachable(ctx: Omit<AuthorizeContext, 'traceId'>, sessionId: string, keyId: string): Promise<SessionRecord> {
  const session = await loadOwnedSession({ ctx, input: { sessionId, keyId } });
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
  return session;
}

/**
 * A phone stream's client secret (its start message's custom parameter, never the URL): the session it was
 * minted for, if it can still be attached (401 for an unknown or expired secret, 410 for an ended session).
 */
export async function authorizeClientSecret({
  ctx,
  input,
}: {
  ctx: Omit<AuthorizeContext, 'traceId'>;
  input: { secret: string };
}): Promise<SessionRecord> {
  const minted = await authenticateClientSecret({ ctx, input: { secret: input.secret, now: ctx.now() } });
  return attachable(ctx, minted.sessionId, minted.keyId);
}
