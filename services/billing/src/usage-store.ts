import { checkpointRoutes, type UsageCheckpoint } from '@s2s/contract';
import { USAGE_COUNTERS } from '@s2s/core';
import type { DbHandle } from '@s2s/db';
import { sqlStatement, withTransaction, type Sql } from '@s2s/db';
import { z } from 'zod';

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

const COUNTERS = USAGE_COUNTERS.join(', ');

/**
 * One parameter per column, row i of each the i-th checkpoint: the text columns as text[] (node-postgres
 * quotes each element, so any id is carried as it is), the numbers and flags as one comma-joined string each
 * (`string_to_array`, nothing in them to quote), `routes` as one JSON array whose i-th element is row i's
 * (JSON null: the split unknown, stored as NULL); unnest zips the arrays, so no join can reorder or multiply rows
 * whatever the plan. About half the database time of the same rows through
 * `json_to_recordset`, whose per-object parse was most of the upsert (docs/benchmarks.md, session 13).
 * A row only moves to a higher `seq` of its own session. `last_audio_at` (the session's activity, see
 * @s2s/sessions' sessionActivitySql) moves to the checkpoint's emission time, never past now(), when it shows
 * new audio: the attachment row is rewritten anyway (a HOT update), where moving
 * voice_sessions.last_activity_at wrote a new session tuple and its index entries for every live session on
 * every fold.
 */
const NUMBER_COLUMNS = ['seq', 'final', ...USAGE_COUNTERS, 'emitted_at'] as const;
const NUMBER_TYPES: Record<(typeof NUMBER_COLUMNS)[number], string> = {
  seq: 'int4',
  final: 'bool',
  ...(Object.fromEntries(USAGE_COUNTERS.map((k) => [k, 'int8'])) as Record<(typeof USAGE_COUNTERS)[number], string>),
  emitted_at: 'int8',
};
export const UPSERT_ATTACHMENTS_SQL = `
  INSERT INTO session_attachments AS a (id, session_id, relay_id, seq, final, ${COUNTERS}, routes, last_audio_at)
  SELECT t.attachment_id, t.session_id, t.relay_id, t.seq, t.final, ${USAGE_COUNTERS.map((k) => `t.${k}`).join(', ')},
         nullif(t.routes, 'null'::jsonb),
         CASE WHEN t.audio_in_ms + t.audio_out_ms > 0 THEN least(now(), to_timestamp(t.emitted_at / 1000.0)) END
    FROM unnest($1::text[], $2::text[], $3::text[],
                ${NUMBER_COLUMNS.map((k, i) => `string_to_array($${4 + i}, ',')::${NUMBER_TYPES[k]}[]`).join(', ')},
                ARRAY(SELECT e FROM jsonb_array_elements($${4 + NUMBER_COLUMNS.length}::jsonb) WITH ORDINALITY AS r(e, n) ORDER BY n))
           AS t(attachment_id, session_id, relay_id, ${NUMBER_COLUMNS.join(', ')}, routes)
  ON CONFLICT (id) DO UPDATE
     SET seq = EXCLUDED.seq, final = EXCLUDED.final, updated_at = now(), routes = EXCLUDED.routes,
         ${USAGE_COUNTERS.map((k) => `${k} = EXCLUDED.${k}`).join(', ')},
         last_audio_at = CASE WHEN EXCLUDED.audio_in_ms + EXCLUDED.audio_out_ms > a.audio_in_ms + a.audio_out_ms
                              THEN greatest(a.last_audio_at, EXCLUDED.last_audio_at) ELSE a.last_audio_at END
   WHERE a.seq < EXCLUDED.seq AND a.session_id = EXCLUDED.session_id`;

/**
 * The upsert, and with each row it wrote whether that row's session is now ready to settle: its end
 * requested, unsettled, and every attachment final. The statement sees the attachments as they were before
 * its own writes (the batch's non-final rows, written by the statement before it, included; and, under the
 * session locks, as no other transaction can change them), so a row counts as written where the upsert wrote
 * it and as read elsewhere.
 */
const UPSERT_AND_READY_SQL = `
  WITH written AS (${UPSERT_ATTACHMENTS_SQL} RETURNING a.id, a.session_id, a.final)
  SELECT w.session_id, w.final,
         w.final AND EXISTS (SELECT 1 FROM voice_sessions s
                              WHERE s.id = w.session_id AND s.settled_at IS NULL AND s.end_requested_at IS NOT NULL)
                 AND NOT EXISTS (SELECT 1 FROM written o WHERE o.session_id = w.session_id AND NOT o.final)
                 AND NOT EXISTS (SELECT 1 FROM session_attachments a
                                  WHERE a.session_id = w.session_id AND NOT a.final
                                    AND NOT EXISTS (SELECT 1 FROM written o WHERE o.id = a.id)) AS ready
    FROM written w`;

// Settlement's FOR UPDATE waits for this transaction, so a fold and a settlement never interleave. NO KEY
// UPDATE, not SHARE: two replicas folding one session take turns (no shared multixact lock).
const FOLD_LOCK = sqlStatement(import.meta.url, {
  name: 'billing_fold_lock',
  text: `SELECT id, settled_at IS NOT NULL AS settled FROM voice_sessions WHERE id = ANY($1::text[]) ORDER BY id FOR NO KEY UPDATE`,
  row: z.object({ id: z.string(), settled: z.boolean() }),
});

const UPSERT_AND_READY = sqlStatement(import.meta.url, {
  name: 'billing_fold_columns_ready',
  text: UPSERT_AND_READY_SQL,
  row: z.object({ session_id: z.string(), final: z.boolean(), ready: z.boolean() }),
});

const ATTACHMENT_AUDIO = sqlStatement(import.meta.url, {
  text: `SELECT id, (audio_in_ms + audio_out_ms)::float8 AS audio_ms FROM session_attachments WHERE id = ANY($1::text[])`,
  row: z.object({ id: z.string(), audio_ms: z.number() }),
});

const ATTACHMENT_SESSIONS = sqlStatement(import.meta.url, {
  text: `SELECT id, session_id FROM session_attachments WHERE id = ANY($1::text[])`,
  row: z.object({ id: z.string(), session_id: z.string() }),
});

/**
 * Writes the newest checkpoint of each attachment (already folded in memory) in one transaction:
 * sessions locked in id order, one multi-row upsert that only moves an attachment to a higher `seq`
 * (idempotent and order-independent) and moves each attachment's `last_audio_at` where new audio shows.
 */
export async function storeCheckpoints({
  ctx,
  input,
}: {
  ctx: { db: DbHandle };
  input: { newest: Iterable<UsageCheckpoint> };
}): Promise<StoredCheckpoints> {
  const newest = sortedForStore(input.newest);
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
    const locked = await FOLD_LOCK.run(sql, [sessionIds]);
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

    // The batch's final checkpoints (few: a session's last) are written by the statement that also tells which
    // sessions they make ready; the others (most) by the plain upsert, first, so that the readiness statement
    // reads them as stored. A batch without a final makes no session ready (a row it writes is not final).
    const finals = live.filter((c) => c.final);
    const others = finals.length === 0 ? live : live.filter((c) => !c.final);
    if (others.length > 0) {
      const upserted = await sql.query({ name: 'billing_fold_columns', text: UPSERT_ATTACHMENTS_SQL, values: upsertParameters(others) });
      result.advanced += upserted.rowCount ?? 0;
    }
    if (finals.length > 0) {
      const written = await UPSERT_AND_READY.run(sql, upsertParameters(finals));
      result.advanced += written.rows.length;
      result.readyToSettle = [...new Set(written.rows.filter((w) => w.ready).map((w) => w.session_id))];
    }
    if (result.advanced < live.length) await findForeign(sql, live, result.foreignAttachments);
    return result;
  });
}

/** The checkpoints in attachment id order: the order every transaction writes the rows in. */
export function sortedForStore(newest: Iterable<UsageCheckpoint>): UsageCheckpoint[] {
  return [...newest].sort((a, b) => (a.attachment_id < b.attachment_id ? -1 : a.attachment_id > b.attachment_id ? 1 : 0));
}

/**
 * The upsert's parameters (UPSERT_ATTACHMENTS_SQL), row i from live[i]. Version 4 routes are arrays (a single
 * route without its counters): stored as objects, as every reader of session_attachments.routes (settlement,
 * the session resource) takes them. Only each batch's newest checkpoint of an attachment comes here.
 */
export function upsertParameters(live: readonly UsageCheckpoint[]): (string | string[])[] {
  return [
    live.map((c) => c.attachment_id),
    live.map((c) => c.session_id),
    live.map((c) => c.relay_id),
    // Validated integers (and booleans): their decimal text has no comma.
    ...NUMBER_COLUMNS.map((k) => live.map((c) => c[k]).join(',')),
    JSON.stringify(live.map(checkpointRoutes)),
  ];
}

async function measureUnbilled(sql: Sql, late: UsageCheckpoint[], out: Map<string, number>): Promise<void> {
  const { rows } = await ATTACHMENT_AUDIO.run(sql, [late.map((c) => c.attachment_id)]);
  const billed = new Map(rows.map((r) => [r.id, r.audio_ms]));
  for (const c of late) {
    const extra = Math.max(0, c.audio_in_ms + c.audio_out_ms - (billed.get(c.attachment_id) ?? 0));
    out.set(c.session_id, (out.get(c.session_id) ?? 0) + extra);
  }
}

async function findForeign(sql: Sql, live: UsageCheckpoint[], out: Set<string>): Promise<void> {
  const { rows } = await ATTACHMENT_SESSIONS.run(sql, [live.map((c) => c.attachment_id)]);
  const owner = new Map(rows.map((r) => [r.id, r.session_id]));
  for (const c of live) {
    const s = owner.get(c.attachment_id);
    if (s !== undefined && s !== c.session_id) out.add(c.attachment_id);
  }
}
