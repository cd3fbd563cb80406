import {
  CLIENT_SECRET_DEFAULT_SECONDS,
  SESSION_MODE,
  type ClientSecret,
  type CreateRealtimeClientSecretRequest,
  type ExpiresAfter,
  type RealtimeClientSecretResponse,
} from '@s2s/contract';
import { errors, expiresAt, isTerminal, sessionPolicyOf, type AuthenticatedKey } from '@s2s/core';
import { createSession, getSession, mintClientSecret } from '@s2s/sessions';
import type { AppContext } from '../context.js';

const unixSeconds = (d: Date) => Math.floor(d.getTime() / 1000);
const ttlOf = (expiresAfter: ExpiresAfter | undefined) => expiresAfter?.seconds ?? CLIENT_SECRET_DEFAULT_SECONDS;

/**
 * POST /v1/realtime/client_secrets (decisions.md, "Ephemeral client secrets"): a voice session created exactly
 * like POST /v1/voice/sessions (same checks, preauthorization and errors) that keeps the requested settings
 * for the relay to apply at attach and ends with its socket, and a secret that attaches it.
 */
export async function createRealtimeClientSecret({
  ctx,
  input,
}: {
  ctx: AppContext;
  input: { keySecretHash: string; request: CreateRealtimeClientSecretRequest; traceId: string };
}): Promise<RealtimeClientSecretResponse> {
  const { type, model, ...settings } = input.request.session;
  const { session } = await createSession({
    ctx,
    input: {
      key: { secretHash: input.keySecretHash },
      request: { model, mode: SESSION_MODE },
      clientSecretSettings: settings,
      traceId: input.traceId,
      policy: sessionPolicyOf(ctx.config),
    },
  });
  const minted = await mintClientSecret({
    ctx,
    input: { sessionId: session.id, ttlSeconds: ttlOf(input.request.expires_after), now: ctx.now() },
  });
  return {
    value: minted.value,
    expires_at: unixSeconds(minted.expiresAt),
    session: {
      ...settings,
      type,
      object: 'realtime.session',
      id: session.id,
      model: session.modelId,
      expires_at: unixSeconds(expiresAt(session)),
    },
  };
}

/**
 * POST /v1/voice/sessions/{id}/client_secrets: a secret for a session the key owns that is not terminal
 * (410 session_expired otherwise, also for one this very read expired). The session keeps its canonical rules.
 */
export async function mintSessionClientSecret({
  ctx,
  input,
}: {
  ctx: AppContext;
  input: { key: AuthenticatedKey; sessionId: string; expiresAfter: ExpiresAfter | undefined };
}): Promise<ClientSecret> {
  const session = await getSession({ ctx, input: { sessionId: input.sessionId, keyId: input.key.keyId } });
  if (isTerminal(session.status) || session.endRequestedAt !== null || session.settledAt !== null) throw errors.sessionExpired();
  const minted = await mintClientSecret({ ctx, input: { sessionId: session.id, ttlSeconds: ttlOf(input.expiresAfter), now: ctx.now() } });
  return { value: minted.value, expires_at: unixSeconds(minted.expiresAt) };
}
