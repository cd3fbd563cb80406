import { bearerToken, errors, hashApiKey, isApiKeyShaped, type AuthenticatedKey } from '@s2s/core';
import { sqlStatement } from '@s2s/db';
import { z } from 'zod';
import type { SessionsDbContext } from './context.js';

const AUTHENTICATE_KEY = sqlStatement(import.meta.url, {
  name: 'sessions_authenticate_key',
  text: 'SELECT id, wallet_id FROM api_keys WHERE secret_hash = $1 AND revoked_at IS NULL',
  row: z.object({ id: z.string(), wallet_id: z.string() }),
});

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
  const { rows } = await AUTHENTICATE_KEY.run(ctx.db.pool, [hashApiKey(secret)]);
  const key = rows[0];
  if (!key) throw errors.invalidKey();
  return { keyId: key.id, walletId: key.wallet_id };
}
