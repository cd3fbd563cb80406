import { errors, isPossibleId, type SessionRecord } from '@s2s/core';
import type { Sql } from '@s2s/db';
import type { SessionsContext, SessionsDbContext } from './context.js';
import { expireIfDue } from './expire-if-due.js';
import { selectOwnedSession } from './session-row.js';

export interface OwnedSessionInput {
  sessionId: string;
  /** The authenticated caller; only its own sessions are read. */
  keyId: string;
}

/** The session owned by `keyId`: 401 invalid_vr_sk when another key owns it, 404 when there is none. */
export async function loadOwnedSession({ ctx, input }: { ctx: SessionsDbContext; input: OwnedSessionInput }): Promise<SessionRecord> {
  return readOwnedSession(ctx.db.pool, input);
}

/** loadOwnedSession on a given connection (inside a transaction). */
export async function readOwnedSession(sql: Sql, input: OwnedSessionInput): Promise<SessionRecord> {
  if (!isPossibleId(input.sessionId)) throw errors.sessionNotFound();
  const session = await selectOwnedSession(sql, input.sessionId, input.keyId);
  if (session) return session;
  const { rowCount } = await sql.query('SELECT 1 FROM voice_sessions WHERE id = $1', [input.sessionId]);
  throw (rowCount ?? 0) > 0 ? errors.invalidKey() : errors.sessionNotFound();
}

function isExpired(s: SessionRecord): boolean {
  return s.status === 'expired' || s.terminalStatus === 'expired';
}

/**
 * GET /v1/voice/sessions/{id}: ownership first, then expiry. A read past the idle or maximum deadline
 * requests the end (billing settles it) and, like any expired session, answers 410 session_expired.
 */
export async function getSession({ ctx, input }: { ctx: SessionsContext; input: OwnedSessionInput }): Promise<SessionRecord> {
  let session = await loadOwnedSession({ ctx, input });
  const { due, end } = await expireIfDue({ ctx, input: { session } });
  if (due !== null) {
    if (end?.terminalStatus === 'expired') throw errors.sessionExpired();
    // Another ending (or settlement) won the race: answer from what the store now says.
    session = await loadOwnedSession({ ctx, input });
  }
  if (isExpired(session)) throw errors.sessionExpired();
  return session;
}
