import { sqlStatement } from '@s2s/db';
import { z } from 'zod';
import type { SessionsDbContext } from './context.js';

export interface HeldSessionState {
  sessionId: string;
  /** The newest attachment of the session: (started_at, id) highest, the order the announcements use. */
  newestAttachmentId: string | null;
  ending: boolean;
  keyRevoked: boolean;
}

const HELD_SESSIONS = sqlStatement(import.meta.url, {
  text: `SELECT s.id,
            (SELECT a.id FROM session_attachments a WHERE a.session_id = s.id
              ORDER BY a.started_at DESC, a.id COLLATE "C" DESC LIMIT 1) AS newest,
            (s.end_requested_at IS NOT NULL OR s.settled_at IS NOT NULL) AS ending,
            (k.revoked_at IS NOT NULL) AS revoked
       FROM voice_sessions s JOIN api_keys k ON k.id = s.key_id
      WHERE s.id = ANY($1::text[])`,
  row: z.object({ id: z.string(), newest: z.string().nullable(), ending: z.boolean(), revoked: z.boolean() }),
});

/** One query for every session a relay holds: what the bus may have failed to tell it. */
export async function readHeldSessions({
  ctx,
  input,
}: {
  ctx: SessionsDbContext;
  input: { sessionIds: string[] };
}): Promise<HeldSessionState[]> {
  if (input.sessionIds.length === 0) return [];
  const { rows } = await HELD_SESSIONS.run(ctx.db.pool, [input.sessionIds]);
  return rows.map((r) => ({ sessionId: r.id, newestAttachmentId: r.newest, ending: r.ending, keyRevoked: r.revoked }));
}
