import type { SessionTransport } from '@s2s/contract';
import type { Usage } from '@s2s/core';
import { sqlStatement, usageFromRow, usageRowShape, usageSums } from '@s2s/db';
import { z } from 'zod';
import type { SessionsDbContext } from './context.js';

export interface RecordedAttachment {
  startedAt: Date;
  lastActivityAt: Date;
  /** Usage folded so far from this session's earlier attachments (their newest checkpoints). */
  prior: Usage;
}

const RECORD_ATTACHMENT = sqlStatement(import.meta.url, {
  text: `WITH s AS (
       UPDATE voice_sessions SET last_activity_at = now()
        WHERE id = $1 AND settled_at IS NULL AND end_requested_at IS NULL
        RETURNING id, last_activity_at
     ), a AS (
       INSERT INTO session_attachments (id, session_id, relay_id, transport, dialect) SELECT $2, id, $3, $4, $5 FROM s RETURNING started_at
     )
     SELECT a.started_at, s.last_activity_at, u.*
       FROM a, s, (SELECT ${usageSums('p')} FROM session_attachments p WHERE p.session_id = $1) u`,
  row: z.object({ started_at: z.date(), last_activity_at: z.date(), ...usageRowShape }),
});

/**
 * Inserts the attachment row and bumps last_activity_at in one statement, only while the session is
 * neither settled nor asked to end: an end recorded after the checks before the upgrade still wins (null).
 */
export async function recordAttachment({
  ctx,
  input,
}: {
  ctx: SessionsDbContext;
  /**
   * `transport`: what carries the media; only a WebSocket client may attach again after its relay is gone.
   * `dialect`: the relay's wire dialect on it (svc-realtime-v1, openai, twilio, telnyx), shown to the operator.
   */
  input: { sessionId: string; attachmentId: string; relayId: string; transport: SessionTransport; dialect: string };
}): Promise<RecordedAttachment | null> {
  const { rows } = await RECORD_ATTACHMENT.run(ctx.db.pool, [
    input.sessionId,
    input.attachmentId,
    input.relayId,
    input.transport,
    input.dialect,
  ]);
  const row = rows[0];
  if (!row) return null;
  return {
    startedAt: row.started_at,
    lastActivityAt: row.last_activity_at,
    prior: usageFromRow(row),
  };
}
