import type { UsageCheckpoint } from '@s2s/contract';
import { USAGE_COUNTERS } from '@s2s/core';
import type { DbHandle } from '@s2s/db';
import { withTransaction, type Sql } from '@s2s/db';

export interface StoredCheckpoints {
  /** Sessions that do not exist: their checkpoints are acknowledged and logged. */
  unknownSessions: Set<string>;
  /** Sessions already settled: their usage can no longer be billed. */
  settledSessions: Set<string>;
  /** Audio (in + out ms) that checkpoints of settled sessions show beyond what was billed, per session. */
  unbilledAudioMs: Map<string, number>;
  /** Attachments whose stored row belongs to another session than the checkpoint names (ignored). */
  foreignAttachments: Set<string>;
  /** Attachments whose counters moved forward. */
  advanced: number;
  /** Sessions whose end is requested and whose every attachment is now final: settle them now. */
  readyToSettle: string[];
}

/**
 * Resolution of `last_activity_at` moved by checkpoints: idle deadlines are whole seconds of a timeout of
 * minutes, and the sweeper acts within 30 s, so a second of lag changes nothing anyone can observe.
 */
export const ACTIVITY_RESOLUTION_MS = 1000;

interface SessionLockRow {
  id: string;
  settled: boolean;
}

const COUNTERS = USAGE_COUNTERS.join(', ');

/** $1..$5: ids, sessions, relays, seqs, finals; $6..: one int8 array per usage counter. */
const UPSERT_ATTACHMENTS_SQL = `
  WITH input AS (
    SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::int4[], $5::bool[], ${USAGE_COUNTERS.map((_, i) => `$${i + 6}::int8[]`).join(', ')})
      AS t(id, session_id, relay_id, seq, final, ${COUNTERS})
  ), previous AS (
    SELECT a.id, a.audio_in_ms + a.audio_out_ms AS audio_ms FROM session_attachments a WHERE a.id = ANY($1::text[])
  ), written AS (
    INSERT INTO session_attachments AS a (id, session_id, relay_id, seq, final, ${COUNTERS})
    SELECT id, session_id, relay_id, seq, final, ${COUNTERS} FROM input
    ON CONFLICT (id) DO UPDATE
       SET seq = EXCLUDED.seq, final = EXCLUDED.final, updated_at = now(),
           ${USAGE_COUNTERS.map((k) => `${k} = EXCLUDED.${k}`).join(', ')}
     WHERE a.seq < EXCLUDED.seq AND a.session_id = EXCLUDED.session_id
    RETURNING a.id, a.session_id, a.final, a.audio_in_ms + a.audio_out_ms AS audio_ms
  )
  SELECT w.id, w.session_id, w.final, w.audio_ms > coalesce(p.audio_ms, 0) AS new_audio
    FROM written w LEFT JOIN previous p ON p.id = w.id`;

/**
 * Writes the newest checkpoint of each attachment (already folded in memory) in one transaction:
 * sessions locked in id order, one multi-row upsert that only moves an attachment to a higher `seq`
 * (idempotent and order-independent), and `last_activity_at` moved forward where new audio shows.
 */
export async function storeCheckpoints({
  ctx,
  input,
}: {
  ctx: { db: DbHandle };
  input: { newest: Iterable<UsageCheckpoint> };
}): Promise<StoredCheckpoints> {
  const newest = [...input.newest].sort((a, b) => (a.attachment_id < b.attachment_id ? -1 : a.attachment_id > b.attachment_id ? 1 : 0));
  const result: StoredCheckpoints = {
    unknownSessions: new Set(),
    settledSessions: new Set(),
    unbilledAudioMs: new Map(),
    foreignAttachments: new Set(),
    advanced: 0,
    readyToSettle: [],
  };
  if (newest.length === 0) return result;
  const sessionIds = [...new Set(newest.map((c) => c.session_id))].sort();

  return withTransaction(ctx, async (sql) => {
    // NO KEY UPDATE (not SHARE): two replicas folding one session would otherwise both hold a shared lock
    // and deadlock upgrading it for last_activity_at; settlement's FOR UPDATE waits for this transaction.
    const locked = await sql.query<SessionLockRow>(
      `SELECT id, settled_at IS NOT NULL AS settled FROM voice_sessions WHERE id = ANY($1::text[]) ORDER BY id FOR NO KEY UPDATE`,
      [sessionIds],
    );
    const found = new Map(locked.rows.map((r) => [r.id, r.settled]));
    for (const id of sessionIds) {
      const settled = found.get(id);
      if (settled === undefined) result.unknownSessions.add(id);
      else if (settled) result.settledSessions.add(id);
    }
    const live = newest.filter((c) => found.get(c.session_id) === false);
    const late = newest.filter((c) => found.get(c.session_id) === true);
    if (late.length > 0) await measureUnbilled(sql, late, result.unbilledAudioMs);
    if (live.length === 0) return result;

    const written = await sql.query<{ id: string; session_id: string; final: boolean; new_audio: boolean }>(UPSERT_ATTACHMENTS_SQL, [
      live.map((c) => c.attachment_id),
      live.map((c) => c.session_id),
      live.map((c) => c.relay_id),
      live.map((c) => c.seq),
      live.map((c) => c.final),
      ...USAGE_COUNTERS.map((k) => live.map((c) => c[k])),
    ]);
    result.advanced = written.rows.length;
    if (written.rows.length < live.length) await findForeign(sql, live, result.foreignAttachments);

    // Activity is the relay's emission time, never later than now (a relay clock ahead must not extend it).
    const emittedAt = new Map(live.map((c) => [c.attachment_id, c.emitted_at]));
    const activity = new Map<string, number>();
    for (const w of written.rows) {
      if (!w.new_audio) continue;
      const at = emittedAt.get(w.id) ?? 0;
      activity.set(w.session_id, Math.max(activity.get(w.session_id) ?? 0, at));
    }
    if (activity.size > 0) {
      // Only where it moves by a whole ACTIVITY_RESOLUTION_MS: every session row written is a new tuple and
      // index entries, and at one checkpoint every 250 ms that write would be most of the fold's cost.
      await sql.query(
        `UPDATE voice_sessions s
            SET last_activity_at = least(now(), to_timestamp(x.emitted_ms / 1000.0))
           FROM unnest($1::text[], $2::int8[]) AS x(id, emitted_ms)
          WHERE s.id = x.id
            AND s.last_activity_at < least(now(), to_timestamp(x.emitted_ms / 1000.0)) - make_interval(secs => $3::float8 / 1000)`,
        [[...activity.keys()], [...activity.values()], ACTIVITY_RESOLUTION_MS],
      );
    }

    const finalSessions = [...new Set(written.rows.filter((w) => w.final).map((w) => w.session_id))];
    if (finalSessions.length > 0) {
      const ready = await sql.query<{ id: string }>(
        `SELECT s.id FROM voice_sessions s
          WHERE s.id = ANY($1::text[]) AND s.settled_at IS NULL AND s.end_requested_at IS NOT NULL
            AND NOT EXISTS (SELECT 1 FROM session_attachments a WHERE a.session_id = s.id AND NOT a.final)`,
        [finalSessions],
      );
      result.readyToSettle = ready.rows.map((r) => r.id);
    }
    return result;
  });
}

async function measureUnbilled(sql: Sql, late: UsageCheckpoint[], out: Map<string, number>): Promise<void> {
  const { rows } = await sql.query<{ id: string; audio_ms: number }>(
    `SELECT id, (audio_in_ms + audio_out_ms)::float8 AS audio_ms FROM session_attachments WHERE id = ANY($1::text[])`,
    [late.map((c) => c.attachment_id)],
  );
  const billed = new Map(rows.map((r) => [r.id, r.audio_ms]));
  for (const c of late) {
    const extra = Math.max(0, c.audio_in_ms + c.audio_out_ms - (billed.get(c.attachment_id) ?? 0));
    out.set(c.session_id, (out.get(c.session_id) ?? 0) + extra);
  }
}

async function findForeign(sql: Sql, live: UsageCheckpoint[], out: Set<string>): Promise<void> {
  const { rows } = await sql.query<{ id: string; session_id: string }>(
    `SELECT id, session_id FROM session_attachments WHERE id = ANY($1::text[])`,
    [live.map((c) => c.attachment_id)],
  );
  const owner = new Map(rows.map((r) => [r.id, r.session_id]));
  for (const c of live) {
    const s = owner.get(c.attachment_id);
    if (s !== undefined && s !== c.session_id) out.add(c.attachment_id);
  }
}
