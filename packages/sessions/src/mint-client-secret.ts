import { issueClientSecret } from '@s2s/core';
import type { SessionsDbContext } from './context.js';

export interface MintedClientSecret {
  /** `ek_…`: shown once to the caller, never stored or logged. */
  value: string;
  expiresAt: Date;
}

/**
 * Stores the hash of a new client secret for `sessionId`, valid `ttlSeconds` from `now` (decisions.md,
 * "Ephemeral client secrets"). The caller has checked that its key owns the session and that it is not terminal.
 */
export async function mintClientSecret({
  ctx,
  input,
}: {
  ctx: SessionsDbContext;
  input: { sessionId: string; ttlSeconds: number; now: Date };
}): Promise<MintedClientSecret> {
  const { secret, hash } = issueClientSecret();
  const createdAt = new Date(Math.floor(input.now.getTime() / 1000) * 1000);
  const expiresAt = new Date(createdAt.getTime() + input.ttlSeconds * 1000);
  await ctx.db.pool.query({
    name: 'sessions_mint_client_secret',
    text: 'INSERT INTO client_secrets (secret_hash, session_id, created_at, expires_at) VALUES ($1, $2, $3, $4)',
    values: [hash, input.sessionId, createdAt, expiresAt],
  });
  return { value: secret, expiresAt };
}
