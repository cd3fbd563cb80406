import { sqlStatement, type Sql } from '@s2s/db';
import { z } from 'zod';

/**
 * A session's activity moves on create, attach and first input (`voice_sessions.last_activity_at`, written by
 * the control plane and the relay) and with every folded usage checkpoint that shows new audio
 * (`session_attachments.last_audio_at`, written by billing's fold, which rewrites the attachment row anyway).
 * Its activity is the later of the two (docs/billing.md, "Fold").
 */

/** The newest audio activity of the attachments of session alias `s`, as an SQL expression (NULL if none). */
export function attachmentsAudioAtSql(s: string): string {
  return `(SELECT max(a.last_audio_at) FROM session_attachments a WHERE a.session_id = ${s}.id)`;
}

/** The activity of session alias `s` as an SQL expression. */
export function sessionActivitySql(s: string): string {
  return `greatest(${s}.last_activity_at, ${attachmentsAudioAtSql(s)})`;
}

const ATTACHMENTS_AUDIO_AT = sqlStatement(import.meta.url, {
  text: `SELECT max(last_audio_at) AS at FROM session_attachments WHERE session_id = $1`,
  row: z.object({ at: z.date().nullable() }),
});

/**
 * The activity of a session whose row this transaction has locked, given its `last_activity_at`. A statement
 * of its own, after the lock: a fold holds the session row until it commits, so this sees every fold.
 */
export async function lockedSessionActivity(sql: Sql, sessionId: string, lastActivityAt: Date): Promise<Date> {
  const { rows } = await ATTACHMENTS_AUDIO_AT.run(sql, [sessionId]);
  const at = rows[0]?.at;
  return at && at > lastActivityAt ? at : lastActivityAt;
}
