import { CheckpointRoute, TerminalStatus, type Rate, type SessionSettled } from '@s2s/contract';
import { AppError, settledCents, USAGE_COUNTERS, usageByRoute, type Usage } from '@s2s/core';
import type { DbHandle } from '@s2s/db';
import { sessionActivitySql } from '@s2s/sessions';
import { z } from 'zod';
import { settledStatus } from './decide.js';
import {
  rateColumns,
  rateFromRow,
  rateRowShape,
  sqlStatement,
  usageFromRow,
  usageRowShape,
  usageSums,
  withTransaction,
  type Sql,
} from '@s2s/db';

export interface Settlement {
  sessionId: string;
  status: TerminalStatus;
  billedCents: number;
  settledAt: Date;
}

export type SettleOutcome =
  | { outcome: 'settled'; settlement: Settlement; usage: Usage; endRequestedAt: Date }
  | { outcome: 'already_settled'; settlement: Settlement }
  | { outcome: 'not_found' }
  | { outcome: 'not_requested' };

export interface SettlementPlan {
  status: TerminalStatus;
  billedCents: number;
  /** What the wallet's reserved amount drops by: the session's whole open reservation. */
  releaseCents: number;
}

/**
 * What settling a session does to the money (decisions.md, Money): bill the formula on the rate snapshot
 * and the server-measured usage, never above the preauthorization, and release the reservation. The
 * status is the recorded one, except that a session with accepted input is never `cancelled`.
 */
export function planSettlement(s: {
  rate: Rate;
  usage: Usage;
  preauthorizedCents: number;
  reservedCents: number;
  terminalStatus: TerminalStatus;
}): SettlementPlan {
  return {
    status: settledStatus(s.terminalStatus, s.usage),
    billedCents: settledCents(s.rate, s.usage, s.preauthorizedCents),
    releaseCents: s.reservedCents,
  };
}

export function settledMessage(s: Settlement): SessionSettled {
  return {
    type: 'session.settled',
    version: 1,
    session_id: s.sessionId,
    status: s.status,
    billed_cents: s.billedCents,
    settled_at: s.settledAt.getTime(),
  };
}

/**
 * Settles one ended session in one transaction of four round trips (BEGIN, the lock, the usage, one write)
 * and its COMMIT: session row locked, then one statement writes the settlements row (its primary key makes a
 * second settler a no-op), charges the wallet and releases the reservation, adds one `charge` ledger row, and
 * makes the session terminal with its final usage. A session already settled is answered as it was.
 */
export async function settleSession({ ctx, input }: { ctx: { db: DbHandle }; input: { sessionId: string } }): Promise<SettleOutcome> {
  const { sessionId } = input;
  return withTransaction(ctx, async (sql) => {
    // Named statements: prepared once per connection, not planned again for every settlement.
    const { rows } = await SETTLE_LOCK.run(sql, [sessionId]);
    const s = rows[0];
    if (!s) return { outcome: 'not_found' };
    if (s.settled_at) {
      return {
        outcome: 'already_settled',
        settlement: { sessionId, status: s.status as TerminalStatus, billedCents: s.billed_cents, settledAt: s.settled_at },
      };
    }
    if (!s.end_requested_at || !s.terminal_status) return { outcome: 'not_requested' };

    // A statement of its own, after the lock: a fold holds the session row until it commits, and a statement
    // sees only what was committed when it began, so the lock's statement could miss the fold it waited for.
    const { usage, routes } = await attachmentTotals(sql, sessionId);
    const plan = planSettlement({
      rate: rateFromRow(s),
      usage,
      preauthorizedCents: s.preauthorized_cents,
      reservedCents: s.reserved_cents,
      terminalStatus: s.terminal_status,
    });
    const counters = USAGE_COUNTERS.map((c) => usage[c]);
    const written = await SETTLE_WRITE.run(sql, [
      sessionId,
      plan.status,
      plan.billedCents,
      s.wallet_id,
      plan.releaseCents,
      routes === null ? null : JSON.stringify(routes),
      ...counters,
    ]);
    // The settlements row is written under the session lock, so a conflict (no row) cannot happen.
    const settledAt = written.rows[0]?.settled_at;
    if (!settledAt) throw new AppError('internal_error', 'settlements row exists for an unsettled session');
    const settlement = { sessionId, status: plan.status, billedCents: plan.billedCents, settledAt };
    return { outcome: 'settled', settlement, usage, endRequestedAt: s.end_requested_at };
  });
}

const SETTLE_LOCK_SQL = `
  SELECT s.wallet_id, s.status, s.terminal_status, s.end_requested_at, s.settled_at,
         s.preauthorized_cents, s.reserved_cents, s.billed_cents,
         ${rateColumns('r')}
    FROM voice_sessions s JOIN rate_snapshots r ON r.id = s.rate_snapshot_id
   WHERE s.id = $1
     FOR UPDATE OF s`;

const SETTLE_LOCK = sqlStatement(import.meta.url, {
  name: 'billing_settle_lock',
  text: SETTLE_LOCK_SQL,
  row: z.object({
    wallet_id: z.string(),
    status: z.string(),
    terminal_status: TerminalStatus.nullable(),
    end_requested_at: z.date().nullable(),
    settled_at: z.date().nullable(),
    preauthorized_cents: z.number(),
    reserved_cents: z.number(),
    billed_cents: z.number(),
    ...rateRowShape,
  }),
});

const COUNTER_PARAMS = USAGE_COUNTERS.map((_, i) => `$${i + 7}`);

/**
 * The settlement's writes in one statement: $1 session, $2 status, $3 billed cents, $4 wallet, $5 cents
 * released, $6 routes (jsonb or null), $7.. the usage counters. The wallet, ledger and session writes run
 * only if the settlements row was inserted; one row back, with the session's `settled_at` (null if not).
 */
const SETTLE_WRITE_SQL = `
  WITH settlement AS (
    INSERT INTO settlements (session_id, status, billed_cents, ${USAGE_COUNTERS.join(', ')}, routes)
    VALUES ($1::text, $2::text, $3::int8, ${COUNTER_PARAMS.join(', ')}, $6::jsonb)
    ON CONFLICT (session_id) DO NOTHING
    RETURNING session_id
  ), wallet AS (
    UPDATE wallets SET balance_cents = balance_cents - $3, reserved_cents = reserved_cents - $5, updated_at = now()
     WHERE id = $4 AND EXISTS (SELECT 1 FROM settlement)
  ), ledger AS (
    INSERT INTO ledger_entries (wallet_id, kind, amount_cents, session_id)
    SELECT $4::text, 'charge', $3::int8, session_id FROM settlement
  ), session AS (
    UPDATE voice_sessions
       SET status = $2, terminal_status = $2, settled_at = now(), reserved_cents = 0, billed_cents = $3,
           last_activity_at = ${sessionActivitySql('voice_sessions')},
           ${USAGE_COUNTERS.map((c, i) => `${c} = ${COUNTER_PARAMS[i]}`).join(', ')}
     WHERE id = $1 AND EXISTS (SELECT 1 FROM settlement)
    RETURNING settled_at
  )
  SELECT (SELECT settled_at FROM session) AS settled_at`;

const SETTLE_WRITE = sqlStatement(import.meta.url, {
  name: 'billing_settle_write',
  text: SETTLE_WRITE_SQL,
  row: z.object({ settled_at: z.date().nullable() }),
});

const SETTLE_TOTALS = sqlStatement(import.meta.url, {
  name: 'billing_settle_totals',
  text: `SELECT ${usageSums('a')}, json_agg(a.routes ORDER BY a.started_at, a.id) AS routes
             FROM session_attachments a WHERE a.session_id = $1`,
  row: z.object({ ...usageRowShape, routes: CheckpointRoute.array().nullable().array().nullable() }),
});

/**
 * The session's usage (its attachments' counters summed) and its usage by route (their splits summed; null
 * when any attachment's is unknown), in one read.
 */
async function attachmentTotals(sql: Sql, sessionId: string): Promise<{ usage: Usage; routes: CheckpointRoute[] | null }> {
  const { rows } = await SETTLE_TOTALS.run(sql, [sessionId]);
  const u = rows[0];
  if (!u) throw new AppError('internal_error', 'usage sum returned no row');
  return { usage: usageFromRow(u), routes: usageByRoute(u.routes ?? []) };
}
