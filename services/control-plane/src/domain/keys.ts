import type { CreateKeyRequest, CreateKeyResponse, RevokeKeyResponse } from '@s2s/contract';
import { AppError, issueApiKey, newId } from '@s2s/core';
import type { AppContext } from '../context.js';

/**
 * POST /admin/v1/keys: a wallet funded with `balance_cents` (one `credit` ledger row when > 0) and a key
 * on it. Only the key's hash is stored; the secret exists in this answer and nowhere else.
 */
export async function createKey({ ctx, input }: { ctx: AppContext; input: CreateKeyRequest }): Promise<CreateKeyResponse> {
  const issued = issueApiKey();
  const keyId = newId('key');
  const walletId = newId('wal');
  const balance = BigInt(input.balance_cents);
  const { prisma } = ctx.db;
  await prisma.$transaction([
    prisma.wallet.create({ data: { id: walletId, balanceCents: balance } }),
    ...(balance > 0n ? [prisma.ledgerEntry.create({ data: { walletId, kind: 'credit', amountCents: balance } })] : []),
    prisma.apiKey.create({
      data: { id: keyId, secretHash: issued.hash, prefix: issued.displayPrefix, label: input.label ?? null, walletId },
    }),
  ]);
  return { id: keyId, key: issued.secret, wallet_id: walletId, balance_cents: input.balance_cents };
}

/** POST /admin/v1/keys/{id}/revoke: effective on the next request (keys are never cached); repeatable. */
export async function revokeKey({ ctx, input }: { ctx: AppContext; input: { keyId: string } }): Promise<RevokeKeyResponse> {
  const rows = await ctx.db.prisma.$queryRaw<{ id: string }[]>`
    UPDATE api_keys SET revoked_at = coalesce(revoked_at, now()) WHERE id = ${input.keyId} RETURNING id`;
  if (rows.length === 0) throw new AppError('key_not_found', 'No API key with this id exists.');
  return { id: input.keyId, revoked: true };
}
