import type { CreateKeyRequest, CreateKeyResponse, RevokeKeyResponse } from '@s2s/contract';
import { errors, issueApiKey, newId } from '@s2s/core';
import { withTransaction } from '@s2s/db';
import type { AppContext } from '../context.js';

/**
 * POST /admin/v1/keys: a wallet funded with `balance_cents` (one `credit` ledger row when > 0) and a key
 * on it. Only the key's hash is stored; the secret exists in this answer and nowhere else.
 */
export async function createKey({ ctx, input }: { ctx: Pick<AppContext, 'db'>; input: CreateKeyRequest }): Promise<CreateKeyResponse> {
  const issued = issueApiKey();
  const keyId = newId('key');
  const walletId = newId('wal');
  await withTransaction(ctx, async (tx) => {
    await tx.query('INSERT INTO wallets (id, balance_cents) VALUES ($1, $2::bigint)', [walletId, input.balance_cents]);
    if (input.balance_cents > 0) {
      await tx.query(`INSERT INTO ledger_entries (wallet_id, kind, amount_cents) VALUES ($1, 'credit', $2::bigint)`, [
        walletId,
        input.balance_cents,
      ]);
    }
    await tx.query('INSERT INTO api_keys (id, secret_hash, prefix, label, wallet_id) VALUES ($1, $2, $3, $4, $5)', [
      keyId,
      issued.hash,
      issued.displayPrefix,
      input.label ?? null,
      walletId,
    ]);
  });
  return { id: keyId, key: issued.secret, wallet_id: walletId, balance_cents: input.balance_cents };
}

/** POST /admin/v1/keys/{id}/revoke: effective on the next request (keys are never cached); repeatable. */
export async function revokeKey({ ctx, input }: { ctx: Pick<AppContext, 'db'>; input: { keyId: string } }): Promise<RevokeKeyResponse> {
  const { rowCount } = await ctx.db.pool.query('UPDATE api_keys SET revoked_at = coalesce(revoked_at, now()) WHERE id = $1', [input.keyId]);
  if (rowCount === 0) throw errors.keyNotFound();
  return { id: input.keyId, revoked: true };
}
