import { bearerToken, errors, hashApiKey, isApiKeyShaped, type AuthenticatedKey } from '@s2s/core';
import type { SessionsDbContext } from './context.js';

/** Resolves an `Authorization: Bearer vr_sk_...` header to its live key, or throws 401 invalid_vr_sk. */
export async function authenticateKey({
  ctx,
  input,
}: {
  ctx: SessionsDbContext;
  input: { authorization: string | undefined };
}): Promise<AuthenticatedKey> {
  const secret = bearerToken(input.authorization);
  if (!secret || !isApiKeyShaped(secret)) throw errors.invalidKey();
  const { rows } = await ctx.db.pool.query<{ id: string; wallet_id: string }>({
    name: 'sessions_authenticate_key',
    text: 'SELECT id, wallet_id FROM api_keys WHERE secret_hash = $1 AND revoked_at IS NULL',
    values: [hashApiKey(secret)],
  });
  const key = rows[0];
  if (!key) throw errors.invalidKey();
  return { keyId: key.id, walletId: key.wallet_id };
}
