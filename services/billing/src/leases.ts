import { sqlStatement, type Sql } from '@s2s/db';
import { z } from 'zod';
import type { LeaseView } from './decide.js';

export interface EndedSessionView {
  settled: boolean;
  endRequestedAt: Date | null;
  /** The attachments that have not folded their `final` checkpoint, each with its relay's lease. */
  pending: (LeaseView & { attachmentId: string; relayId: string })[];
}

const ENDED_SESSION = sqlStatement(import.meta.url, {
  text: `SELECT s.settled_at IS NOT NULL AS settled, s.end_requested_at,
            a.id AS attachment_id, a.relay_id, l.relay_id IS NOT NULL AS lease_exists, l.expires_at > now() AS lease_unexpired
       FROM voice_sessions s
       LEFT JOIN session_attachments a ON a.session_id = s.id AND NOT a.final
       LEFT JOIN relay_leases l ON l.relay_id = a.relay_id
      WHERE s.id = $1`,
  row: z.object({
    settled: z.boolean(),
    end_requested_at: z.date().nullable(),
    attachment_id: z.string().nullable(),
    relay_id: z.string().nullable(),
    lease_exists: z.boolean().nullable(),
    lease_unexpired: z.boolean().nullable(),
  }),
});

/** One read of an ended session, its unfinished attachments and their relays' leases (database clock). */
export async function readEndedSession(sql: Sql, sessionId: string): Promise<EndedSessionView | undefined> {
  const { rows } = await ENDED_SESSION.run(sql, [sessionId]);
  const first = rows[0];
  if (!first) return undefined;
  return {
    settled: first.settled,
    endRequestedAt: first.end_requested_at,
    pending: rows
      .filter((r) => r.attachment_id !== null)
      .map((r) => ({
        attachmentId: r.attachment_id ?? '',
        relayId: r.relay_id ?? '',
        exists: r.lease_exists === true,
        unexpired: r.lease_unexpired === true,
      })),
  };
}
