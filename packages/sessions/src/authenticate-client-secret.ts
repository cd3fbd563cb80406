import { errors, hashApiKey, isClientSecretShaped } from '@s2s/core';
import { sqlStatement } from '@s2s/db';
import { z } from 'zod';
import type { SessionsDbContext } from './context.js';

export interface AuthenticatedClientSecret {
  sessionId: string;
  /** The key that owns the session (and minted the secret). */
  keyId: string;
  expiresAt: Date;
}

const AUTHENTICATE_CLIENT_SECRET = sqlStatement(import.meta.url, {
  name: 'sessions_authenticate_client_secret',
  text: `SELECT c.session_id, s.key_id, c.expires_at
             FROM client_secrets c JOIN voice_sessions s ON s.id = c.session_id
            WHERE c.secret_hash = $1 AND c.expires_at > $2`,
  row: z.object({ session_id: z.string(), key_id: z.string(), expires_at: z.date() }),
});

/**
 * Resolves an `ek_…` client secret to the one session it attaches, while it has not expired at `now`;
 * 401 invalid_client_secret otherwise. Whether the session can still be attached is the caller's check.
 */
export async function authenticateClientSecret({
  ctx,
  input,
}: {
  ctx: SessionsDbContext;
  input: { secret: string; now: Date };
}): Promise<AuthenticatedClientSecret> {
  if (!isClientSecretShaped(input.secret)) throw errors.invalidClientSecret();
  const { rows } = await AUTHENTICATE_CLIENT_SECRET.run(ctx.db.pool, [hashApiKey(input.secret), input.now]);
  const row = rows[0];
  if (!row) throw errors.invalidClientSecret();
  return { sessionId: row.session_id, keyId: row.key_id, expiresAt: row.expires_at };
}
