import { LIST_DEFAULT_LIMIT, type AdminListPage, type LedgerEntry, type ListLedgerQuery, type Wallet } from '@s2s/contract';
import { errors, isPossibleId } from '@s2s/core';
import type { AppContext } from '../context.js';
import { decodeCursor, toPage } from './paging.js';

interface WalletRow {
  id: string;
  balance_cents: number;
  reserved_cents: number;
}

function toWallet(row: WalletRow): Wallet {
  return {
    id: row.id,
    balance_cents: row.balance_cents,
    reserved_cents: row.reserved_cents,
    available_cents: row.balance_cents - row.reserved_cents,
  };
}

/** The largest balance a JSON number carries exactly (decisions.md: balances are exact in every answer). */
export const MAX_BALANCE_CENTS = Number.MAX_SAFE_INTEGER;

/**
 * POST /admin/v1/wallets/{id}/credit: the ledger row and the balance move together in one statement; a credit
 * that would take the balance past MAX_BALANCE_CENTS changes nothing and answers 400.
 */
export async function creditWallet({
  ctx,
  input,
}: {
  ctx: Pick<AppContext, 'db'>;
  input: { walletId: string; amountCents: number };
}): Promise<Wallet> {
  if (!isPossibleId(input.walletId)) throw errors.walletNotFound();
  const { rows } = await ctx.db.pool.query<WalletRow>(
    `WITH w AS (
       UPDATE wallets SET balance_cents = balance_cents + $2::bigint, updated_at = now()
        WHERE id = $1 AND balance_cents + $2::bigint <= $3::bigint
       RETURNING id, balance_cents, reserved_cents
     ), l AS (
       INSERT INTO ledger_entries (wallet_id, kind, amount_cents)
       SELECT id, 'credit', $2::bigint FROM w
     )
     SELECT id, balance_cents::float8 AS balance_cents, reserved_cents::float8 AS reserved_cents FROM w`,
    [input.walletId, input.amountCents, MAX_BALANCE_CENTS],
  );
  const row = rows[0];
  if (row) return toWallet(row);
  await getWallet({ ctx, input }); // 404 when there is no such wallet
  throw errors.invalidRequest(`This credit would take the balance past ${MAX_BALANCE_CENTS} cents, the largest balance a wallet holds.`);
}

/** GET /admin/v1/wallets/{id}. */
export async function getWallet({ ctx, input }: { ctx: Pick<AppContext, 'db'>; input: { walletId: string } }): Promise<Wallet> {
  if (!isPossibleId(input.walletId)) throw errors.walletNotFound();
  const { rows } = await ctx.db.pool.query<WalletRow>(
    'SELECT id, balance_cents::float8 AS balance_cents, reserved_cents::float8 AS reserved_cents FROM wallets WHERE id = $1',
    [input.walletId],
  );
  const row = rows[0];
  if (!row) throw errors.walletNotFound();
  return toWallet(row);
}

interface LedgerRow {
  id: string;
  wallet_id: string;
  kind: 'credit' | 'charge';
  amount_cents: number;
  session_id: string | null;
  created_at: number;
}

/** GET /admin/v1/wallets/{id}/ledger: the wallet's credits and charges, newest first; 404 for no such wallet. */
export async function listLedger({
  ctx,
  input,
}: {
  ctx: Pick<AppContext, 'db'>;
  input: { walletId: string; query: ListLedgerQuery };
}): Promise<AdminListPage<LedgerEntry>> {
  const { query } = input;
  const limit = query.limit ?? LIST_DEFAULT_LIMIT;
  const after = decodeCursor(query.after, ['string'] as const);
  if (after && !/^[0-9]{1,19}$/.test(after[0])) throw errors.invalidRequest('after: not a cursor this list issued.');
  await getWallet({ ctx, input }); // 404 first
  const { rows } = await ctx.db.pool.query<LedgerRow>(
    `SELECT id::text AS id, wallet_id, kind, amount_cents::float8 AS amount_cents, session_id,
            floor(extract(epoch FROM created_at))::float8 AS created_at
       FROM ledger_entries
      WHERE wallet_id = $1
        AND ($2::text IS NULL OR kind = $2)
        AND ($3::bigint IS NULL OR id < $3::bigint)
      ORDER BY id DESC
      LIMIT $4`,
    [input.walletId, query.kind ?? null, after?.[0] ?? null, limit + 1],
  );
  return toPage(
    rows,
    limit,
    (r) => ({ ...r, object: 'ledger_entry' as const }),
    (r) => [r.id],
  );
}
