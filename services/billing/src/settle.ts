import type { CheckpointRoute, Rate, SessionSettled, TerminalStatus } from '@s2s/contract';
import { AppError, settledCents, USAGE_COUNTERS, usageByRoute, type RateField, type Usage } from '@s2s/core';
import type { DbHandle } from '@s2s/db';
import { sessionActivitySql } from '@s2s/sessions';
import { settledStatus } from './decide.js';
import { rateColumns, rateFromRow, usageFromRow, usageSums, withTransaction, type Sql } from '@s2s/db';

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

interface SessionForSettlement extends Record<RateField, number> {
  wallet_id: string;
  status: string;
  terminal_status: TerminalStatus | null;
  end_requested_at: Date | null;
  settled_at: Date | null;
  preauthorized_cents: number;
  reserved_cents: number;
  billed_cents: number;
}

/**
 * Settles one ended session in one transaction: session row locked, then settlements row (its primary key
 * makes a second settler a no-op), wallet charged and reservation released, one `charge` ledger row, and
 * the session made terminal with its final usage. A session already settled is answered as it was.
 */
export async function settleSession({ ctx, input }: { ctx: { db: DbHandle }; input: { sessionId: string } }): Promise<SettleOutcome> {
  const { sessionId } = input;
  return withTransaction(ctx, async (sql) => {
    const { rows } = await sql.query<SessionForSettlement>(
      `SELECT s.wallet_id, s.status, s.terminal_status, s.end_requested_at, s.settled_at,
              s.preauthorized_cents, s.reserved_cents, s.billed_cents,
              ${rateColumns('r')}
         FROM voice_sessions s JOIN rate_snapshots r ON r.id = s.rate_snapshot_id
        WHERE s.id = $1
          FOR UPDATE OF s`,
      [sessionId],
    );
    const s = rows[0];
    if (!s) return { outcome: 'not_found' };
    if (s.settled_at) {
      return {
        outcome: 'already_settled',
        settlement: { sessionId, status: s.status as TerminalStatus, billedCents: s.billed_cents, settledAt: s.settled_at },
      };
    }
    if (!s.end_requested_at || !s.terminal_status) return { outcome: 'not_requested' };

    const usage = await attachmentUsage(sql, sessionId);
    const plan = planSettlement({
      rate: rateFromRow(s),
      usage,
      preauthorizedCents: s.preauthorized_cents,
      reservedCents: s.reserved_cents,
      terminalStatus: s.terminal_status,
    });

    const counters = USAGE_COUNTERS.map((c) => usage[c]);
    const routes = await attachmentRoutes(sql, sessionId);
    const inserted = await sql.query(
      `INSERT INTO settlements (session_id, status, billed_cents, ${USAGE_COUNTERS.join(', ')}, routes)
       VALUES ($1, $2, $3, ${USAGE_COUNTERS.map((_, i) => `$${i + 4}`).join(', ')}, $${USAGE_COUNTERS.length + 4}::jsonb)
       ON CONFLICT (session_id) DO NOTHING
       RETURNING session_id`,
      [sessionId, plan.status, plan.billedCents, ...counters, routes === null ? null : JSON.stringify(routes)],
    );
    // Both rows are written in this one transaction under the session lock, so this cannot happen.
    if (inserted.rowCount !== 1) throw new AppError('internal_error', 'settlements row exists for an unsettled session');

    await sql.query(
      `UPDATE wallets SET balance_cents = balance_cents - $2, reserved_cents = reserved_cents - $3, updated_at = now()
        WHERE id = $1`,
      [s.wallet_id, plan.billedCents, plan.releaseCents],
    );
    await sql.query(`INSERT INTO ledger_entries (wallet_id, kind, amount_cents, session_id) VALUES ($1, 'charge', $2, $3)`, [
      s.wallet_id,
      plan.billedCents,
      sessionId,
    ]);
    const updated = await sql.query<{ settled_at: Date }>(
      `UPDATE voice_sessions
          SET status = $3, terminal_status = $3, settled_at = now(), reserved_cents = 0, billed_cents = $2,
              last_activity_at = ${sessionActivitySql('voice_sessions')},
              ${USAGE_COUNTERS.map((c, i) => `${c} = $${i + 4}`).join(', ')}
        WHERE id = $1
        RETURNING settled_at`,
      [sessionId, plan.billedCents, plan.status, ...counters],
    );
    const settledAt = updated.rows[0]?.settled_at;
    if (!settledAt) throw new AppError('internal_error', 'settled session row vanished');
    const settlement = { sessionId, status: plan.status, billedCents: plan.billedCents, settledAt };
    return { outcome: 'settled', settlement, usage, endRequestedAt: s.end_requested_at };
  });
}

/** The session's usage by route (its attachments' splits summed); null when any attachment's is unknown. */
async function attachmentRoutes(sql: Sql, sessionId: string): Promise<CheckpointRoute[] | null> {
  const { rows } = await sql.query<{ routes: CheckpointRoute[] | null }>(
    `SELECT a.routes FROM session_attachments a WHERE a.session_id = $1 ORDER BY a.started_at, a.id`,
    [sessionId],
  );
  return usageByRoute(rows.map((r) => r.routes));
}

async function attachmentUsage(sql: Sql, sessionId: string): Promise<Usage> {
  const { rows } = await sql.query<Usage>(`SELECT ${usageSums('a')} FROM session_attachments a WHERE a.session_id = $1`, [sessionId]);
  const u = rows[0];
  if (!u) throw new AppError('internal_error', 'usage sum returned no row');
  return usageFromRow(u);
}
