import type { Wallet } from '@s2s/contract';
import { AppError } from '@s2s/core';
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

const walletNotFound = () => new AppError('wallet_not_found', 'No wallet with this id exists.');

/** POST /admin/v1/wallets/{id}/credit: the ledger row and the balance move together in one statement. */
export async function creditWallet({ ctx, input }: { ctx: AppContext; input: { walletId: string; amountCents: number } }): Promise<Wallet> {
  const rows = await ctx.db.prisma.$queryRaw<WalletRow[]>`
    WITH w AS (
      UPDATE wallets SET balance_cents = balance_cents + ${input.amountCents}::bigint, updated_at = now()
       WHERE id = ${input.walletId}
      RETURNING id, balance_cents, reserved_cents
    ), l AS (
      INSERT INTO ledger_entries (wallet_id, kind, amount_cents)
      SELECT id, 'credit', ${input.amountCents}::bigint FROM w
    )
    SELECT id, balance_cents::float8 AS balance_cents, reserved_cents::float8 AS reserved_cents FROM w`;
  const row = rows[0];
  if (!row) throw walletNotFound();
  return toWallet(row);
}

/** GET /admin/v1/wallets/{id}. */
export async function getWallet({ ctx, input }: { ctx: AppContext; input: { walletId: string } }): Promise<Wallet> {
  const rows = await ctx.db.prisma.$queryRaw<WalletRow[]>`
    SELECT id, balance_cents::float8 AS balance_cents, reserved_cents::float8 AS reserved_cents
      FROM wallets WHERE id = ${input.walletId}`;
  const row = rows[0];
  if (!row) throw walletNotFound();
  return toWallet(row);
}
