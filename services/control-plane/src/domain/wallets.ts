import type { Wallet } from '@s2s/contract';
import { errors } from '@s2s/core';
import type { AppContext } from '../context.js';

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

/** POST /admin/v1/wallets/{id}/credit: the ledger row and the balance move together in one statement. */
export async function creditWallet({
  ctx,
  input,
}: {
  ctx: Pick<AppContext, 'db'>;
  input: { walletId: string; amountCents: number };
}): Promise<Wallet> {
  const { rows } = await ctx.db.pool.query<WalletRow>(
    `WITH w AS (
       UPDATE wallets SET balance_cents = balance_cents + $2::bigint, updated_at = now()
        WHERE id = $1
       RETURNING id, balance_cents, reserved_cents
     ), l AS (
       INSERT INTO ledger_entries (wallet_id, kind, amount_cents)
       SELECT id, 'credit', $2::bigint FROM w
     )
     SELECT id, balance_cents::float8 AS balance_cents, reserved_cents::float8 AS reserved_cents FROM w`,
    [input.walletId, input.amountCents],
  );
  const row = rows[0];
  if (!row) throw errors.walletNotFound();
  return toWallet(row);
}

/** GET /admin/v1/wallets/{id}. */
export async function getWallet({ ctx, input }: { ctx: Pick<AppContext, 'db'>; input: { walletId: string } }): Promise<Wallet> {
  const { rows } = await ctx.db.pool.query<WalletRow>(
    'SELECT id, balance_cents::float8 AS balance_cents, reserved_cents::float8 AS reserved_cents FROM wallets WHERE id = $1',
    [input.walletId],
  );
  const row = rows[0];
  if (!row) throw errors.walletNotFound();
  return toWallet(row);
}
