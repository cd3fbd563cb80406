import { LIST_DEFAULT_LIMIT, type AdminListPage, type LedgerEntry, type ListLedgerQuery, type Wallet } from '@s2s/contract';
import { errors, isPossibleId } from '@s2s/core';
import { exactNumber, prismaOf } from '@s2s/db/prisma';
import type { AppContext } from '../context.js';
import { decodeCursor, toPage } from './paging.js';

const WALLET = { id: true, balanceCents: true, reservedCents: true } as const;

function toWallet(row: { id: string; balanceCents: bigint; reservedCents: bigint }): Wallet {
  const balance = exactNumber(row.balanceCents);
  const reserved = exactNumber(row.reservedCents);
  return { id: row.id, balance_cents: balance, reserved_cents: reserved, available_cents: balance - reserved };
}

/** The largest balance a JSON number carries exactly (decisions.md: balances are exact in every answer). */
export const MAX_BALANCE_CENTS = Number.MAX_SAFE_INTEGER;

/**
 * POST /admin/v1/wallets/{id}/credit: the ledger row and the balance move together in one transaction; a credit
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
  const amount = BigInt(input.amountCents);
  // The balance and the ledger row move together: the update takes the wallet's row lock until commit.
  const credited = await prismaOf(ctx.db).$transaction(async (tx) => {
    const { count } = await tx.wallet.updateMany({
      where: { id: input.walletId, balanceCents: { lte: BigInt(MAX_BALANCE_CENTS) - amount } },
      data: { balanceCents: { increment: amount }, updatedAt: new Date() },
    });
    if (count === 0) return null;
    await tx.ledgerEntry.create({ data: { walletId: input.walletId, kind: 'credit', amountCents: amount } });
    return tx.wallet.findUniqueOrThrow({ where: { id: input.walletId }, select: WALLET });
  });
  if (credited) return toWallet(credited);
  await getWallet({ ctx, input }); // 404 when there is no such wallet
  throw errors.invalidRequest(`This credit would take the balance past ${MAX_BALANCE_CENTS} cents, the largest balance a wallet holds.`);
}

/** GET /admin/v1/wallets/{id}. */
export async function getWallet({ ctx, input }: { ctx: Pick<AppContext, 'db'>; input: { walletId: string } }): Promise<Wallet> {
  if (!isPossibleId(input.walletId)) throw errors.walletNotFound();
  const row = await prismaOf(ctx.db).wallet.findUnique({ where: { id: input.walletId }, select: WALLET });
  if (!row) throw errors.walletNotFound();
  return toWallet(row);
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
  const rows = await prismaOf(ctx.db).ledgerEntry.findMany({
    where: {
      walletId: input.walletId,
      ...(query.kind === undefined ? {} : { kind: query.kind }),
      ...(after ? { id: { lt: BigInt(after[0]) } } : {}),
    },
    orderBy: { id: 'desc' },
    take: limit + 1,
  });
  return toPage(
    rows,
    limit,
    (r): LedgerEntry => ({
      id: String(r.id),
      wallet_id: r.walletId,
      kind: r.kind as LedgerEntry['kind'],
      amount_cents: exactNumber(r.amountCents),
      session_id: r.sessionId,
      created_at: Math.floor(r.createdAt.getTime() / 1000),
      object: 'ledger_entry',
    }),
    (r) => [String(r.id)],
  );
}
