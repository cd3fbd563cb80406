import type { Usage } from '@s2s/core';
import type { DbHandle } from '@s2s/db';

export interface RecordedAttachment {
  startedAt: Date;
  lastActivityAt: Date;
  /** Usage folded so far from this session's earlier attachments (their newest checkpoints). */
  prior: Usage;
}

/**
 * Inserts the attachment row and bumps last_activity_at in one statement, only while the session is
 * neither settled nor asked to end: an end recorded after the checks before the upgrade still wins (null).
 */
export async function recordAttachment(
  db: DbHandle,
  input: { sessionId: string; attachmentId: string; relayId: string },
): Promise<RecordedAttachment | null> {
  const { rows } = await db.pool.query<{
    started_at: Date;
    last_activity_at: Date;
    audio_in_ms: number;
    audio_out_ms: number;
    input_audio_tokens: number;
    output_audio_tokens: number;
  }>(
    `WITH s AS (
       UPDATE voice_sessions SET last_activity_at = now()
        WHERE id = $1 AND settled_at IS NULL AND end_requested_at IS NULL
        RETURNING id, last_activity_at
     ), a AS (
       INSERT INTO session_attachments (id, session_id, relay_id) SELECT $2, id, $3 FROM s RETURNING started_at
     )
     SELECT a.started_at, s.last_activity_at, u.*
       FROM a, s, (
         SELECT coalesce(sum(audio_in_ms), 0)::float8 AS audio_in_ms,
                coalesce(sum(audio_out_ms), 0)::float8 AS audio_out_ms,
                coalesce(sum(input_audio_tokens), 0)::float8 AS input_audio_tokens,
                coalesce(sum(output_audio_tokens), 0)::float8 AS output_audio_tokens
           FROM session_attachments WHERE session_id = $1
       ) u`,
    [input.sessionId, input.attachmentId, input.relayId],
  );
  const row = rows[0];
  if (!row) return null;
  return {
    startedAt: row.started_at,
    lastActivityAt: row.last_activity_at,
    prior: {
      audio_in_ms: row.audio_in_ms,
      audio_out_ms: row.audio_out_ms,
      input_audio_tokens: row.input_audio_tokens,
      output_audio_tokens: row.output_audio_tokens,
    },
  };
}

/** ready → active on the first accepted input (decisions.md); a no-op for an active or ending session. */
export async function activateSession(db: DbHandle, sessionId: string): Promise<boolean> {
  const { rowCount } = await db.pool.query(
    `UPDATE voice_sessions SET status = 'active', activated_at = now(), last_activity_at = now()
      WHERE id = $1 AND status = 'ready' AND end_requested_at IS NULL`,
    [sessionId],
  );
  return (rowCount ?? 0) > 0;
}

export interface HeldSessionState {
  sessionId: string;
  /** The newest attachment of the session: (started_at, id) highest, the order the announcements use. */
  newestAttachmentId: string | null;
  ending: boolean;
  keyRevoked: boolean;
}

/** One query for every session this relay holds: what the bus may have failed to tell it. */
export async function readHeldSessions(db: DbHandle, sessionIds: string[]): Promise<HeldSessionState[]> {
  if (sessionIds.length === 0) return [];
  const { rows } = await db.pool.query<{ id: string; newest: string | null; ending: boolean; revoked: boolean }>(
    `SELECT s.id,
            (SELECT a.id FROM session_attachments a WHERE a.session_id = s.id
              ORDER BY a.started_at DESC, a.id COLLATE "C" DESC LIMIT 1) AS newest,
            (s.end_requested_at IS NOT NULL OR s.settled_at IS NOT NULL) AS ending,
            (k.revoked_at IS NOT NULL) AS revoked
       FROM voice_sessions s JOIN api_keys k ON k.id = s.key_id
      WHERE s.id = ANY($1::text[])`,
    [sessionIds],
  );
  return rows.map((r) => ({ sessionId: r.id, newestAttachmentId: r.newest, ending: r.ending, keyRevoked: r.revoked }));
}

/** Total order of attachments of one session; JS string order matches COLLATE "C" for ASCII ids. */
export function isNewerAttachment(a: { startedAtMs: number; id: string }, b: { startedAtMs: number; id: string }): boolean {
  return a.startedAtMs !== b.startedAtMs ? a.startedAtMs > b.startedAtMs : a.id > b.id;
}
