import type pg from 'pg';
import { z } from 'zod';
import { sqlStatement } from './statement.js';

export interface LedgerViolation {
  /** Which rule broke (one of the keys of INVARIANTS). */
  invariant: string;
  /** The wallet, session or ledger row concerned. */
  subject: string;
  detail: string;
}

// Each query returns one row (subject, detail) per violation.
const INVARIANTS = {
  ledger_matches_balance: `
    SELECT w.id AS subject,
           format('credits - charges = %s, balance_cents = %s', coalesce(l.net, 0), w.balance_cents) AS detail
    FROM wallets w
    LEFT JOIN (
      SELECT wallet_id,
             coalesce(sum(amount_cents) FILTER (WHERE kind = 'credit'), 0)
               - coalesce(sum(amount_cents) FILTER (WHERE kind = 'charge'), 0) AS net
      FROM ledger_entries GROUP BY wallet_id
    ) l ON l.wallet_id = w.id
    WHERE coalesce(l.net, 0) <> w.balance_cents`,

  reservations_match: `
    SELECT w.id AS subject,
           format('unsettled sessions reserve %s, reserved_cents = %s', coalesce(s.reserved, 0), w.reserved_cents) AS detail
    FROM wallets w
    LEFT JOIN (
      SELECT wallet_id, sum(reserved_cents) AS reserved FROM voice_sessions WHERE settled_at IS NULL GROUP BY wallet_id
    ) s ON s.wallet_id = w.id
    WHERE coalesce(s.reserved, 0) <> w.reserved_cents`,

  funds_nonnegative: `
    SELECT id AS subject, format('balance_cents = %s, reserved_cents = %s', balance_cents, reserved_cents) AS detail
    FROM wallets
    WHERE balance_cents < 0 OR reserved_cents < 0 OR balance_cents - reserved_cents < 0`,

  settled_session_billed_once: `
    SELECT subject, detail FROM (
      SELECT s.id AS subject, concat_ws('; ',
        CASE WHEN st.n <> 1 THEN format('%s settlements rows', st.n) END,
        CASE WHEN st.n = 1 AND st.billed <> s.billed_cents
             THEN format('settlement billed %s, session billed_cents %s', st.billed, s.billed_cents) END,
        CASE WHEN ch.n <> 1 THEN format('%s charge ledger rows', ch.n) END,
        CASE WHEN ch.n = 1 AND ch.amount <> s.billed_cents
             THEN format('charge %s, billed_cents %s', ch.amount, s.billed_cents) END,
        CASE WHEN ch.n = 1 AND ch.wallet_id <> s.wallet_id THEN 'charge on another wallet' END,
        CASE WHEN s.billed_cents > s.preauthorized_cents
             THEN format('billed_cents %s > preauthorized_cents %s', s.billed_cents, s.preauthorized_cents) END
      ) AS detail
      FROM voice_sessions s
      CROSS JOIN LATERAL (
        SELECT count(*) AS n, min(billed_cents) AS billed FROM settlements WHERE session_id = s.id
      ) st
      CROSS JOIN LATERAL (
        SELECT count(*) AS n, min(amount_cents) AS amount, min(wallet_id) AS wallet_id
        FROM ledger_entries WHERE session_id = s.id AND kind = 'charge'
      ) ch
      WHERE s.settled_at IS NOT NULL
    ) v WHERE detail <> ''`,

  charge_has_settlement: `
    SELECT l.id::text AS subject, format('charge for session %s has no settlements row', l.session_id) AS detail
    FROM ledger_entries l
    WHERE l.kind = 'charge' AND NOT EXISTS (SELECT 1 FROM settlements st WHERE st.session_id = l.session_id)`,

  // voice_sessions has no foreign keys to the catalog (a create locks no catalog row): the create inserts the
  // model's current rate, which is the model's own, and snapshots are never deleted. This checks it held.
  session_rate_of_model: `
    SELECT s.id AS subject,
           CASE WHEN r.id IS NULL THEN format('rate snapshot %s does not exist', s.rate_snapshot_id)
                ELSE format('rate snapshot %s is of model %s, the session of %s', r.id, r.model_id, s.model_id) END AS detail
    FROM voice_sessions s LEFT JOIN rate_snapshots r ON r.id = s.rate_snapshot_id
    WHERE r.id IS NULL OR r.model_id <> s.model_id`,

  settlement_marks_session: `
    SELECT st.session_id AS subject, 'settlements row for a session without settled_at' AS detail
    FROM settlements st JOIN voice_sessions s ON s.id = st.session_id
    WHERE s.settled_at IS NULL`,
} as const;

const VIOLATION = z.object({ subject: z.string(), detail: z.string() });
const INVARIANT_STATEMENTS = Object.entries(INVARIANTS).map(
  ([invariant, text]) => [invariant, sqlStatement(import.meta.url, { text, row: VIOLATION })] as const,
);

/**
 * Checks the money invariants over the whole database; an empty list means they all hold.
 * Runs in one read-only REPEATABLE READ transaction so concurrent writers cannot produce false alarms.
 */
export async function checkLedgerInvariants(pool: pg.Pool): Promise<LedgerViolation[]> {
  const client = await pool.connect();
  try {
    await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
    const violations: LedgerViolation[] = [];
    for (const [invariant, statement] of INVARIANT_STATEMENTS) {
      const { rows } = await statement.run(client);
      violations.push(...rows.map((row) => ({ invariant, ...row })));
    }
    await client.query('COMMIT');
    return violations;
  } catch (err) {
    // End the aborted transaction before the connection goes back to the pool.
    await client.query('ROLLBACK').catch(() => {});
    throw err;
  } finally {
    client.release();
  }
}
