import {
  LIST_DEFAULT_LIMIT,
  type AdminListPage,
  type ApiKeyResource,
  type CreateKeyRequest,
  type CreateKeyResponse,
  type ListKeysQuery,
  type RevokeKeyResponse,
  type UpdateKeyRequest,
} from '@s2s/contract';
import { errors, isPossibleId, issueApiKey, newId } from '@s2s/core';
import { withTransaction } from '@s2s/db';
import type { AppContext } from '../context.js';
import { decodeTimeCursor, toPage } from './paging.js';

/**
 * POST /admin/v1/keys: a wallet funded with `balance_cents` (one `credit` ledger row when > 0) and a key
 * on it. Only the key's hash is stored; the secret exists in this answer and nowhere else.
 */
export async function createKey({
  ctx,
  input,
}: {
  ctx: Pick<AppContext, 'db' | 'config'>;
  input: CreateKeyRequest;
}): Promise<CreateKeyResponse> {
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
    await tx.query(
      `INSERT INTO api_keys (id, secret_hash, prefix, label, wallet_id, max_live_sessions, max_creates_per_minute)
       VALUES ($1, $2, $3, $4, $5, $6, $7)`,
      [
        keyId,
        issued.hash,
        issued.displayPrefix,
        input.label ?? null,
        walletId,
        input.max_live_sessions ?? null,
        input.max_creates_per_minute ?? null,
      ],
    );
  });
  const { KEY_MAX_LIVE_SESSIONS, KEY_MAX_CREATES_PER_MINUTE } = ctx.config;
  return {
    id: keyId,
    key: issued.secret,
    wallet_id: walletId,
    balance_cents: input.balance_cents,
    max_live_sessions: input.max_live_sessions ?? KEY_MAX_LIVE_SESSIONS,
    max_creates_per_minute: input.max_creates_per_minute ?? KEY_MAX_CREATES_PER_MINUTE,
  };
}

/** POST /admin/v1/keys/{id}/revoke: effective on the next request (keys are never cached); repeatable. */
export async function revokeKey({ ctx, input }: { ctx: Pick<AppContext, 'db'>; input: { keyId: string } }): Promise<RevokeKeyResponse> {
  if (!isPossibleId(input.keyId)) throw errors.keyNotFound();
  const { rowCount } = await ctx.db.pool.query('UPDATE api_keys SET revoked_at = coalesce(revoked_at, now()) WHERE id = $1', [input.keyId]);
  if (rowCount === 0) throw errors.keyNotFound();
  return { id: input.keyId, revoked: true };
}

/** A key as the operator sees it; $1/$2 are the gateway's default limits. */
const KEY_SELECT = `
  SELECT k.id, k.wallet_id, k.label, k.prefix, k.revoked_at IS NOT NULL AS revoked,
         floor(extract(epoch FROM k.created_at))::float8 AS created_at,
         to_char(k.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS created_key,
         coalesce(k.max_live_sessions, $1::int) AS max_live_sessions,
         coalesce(k.max_creates_per_minute, $2::int) AS max_creates_per_minute,
         greatest(w.sessions_created - w.sessions_ended, 0) AS live_sessions
    FROM api_keys k JOIN wallets w ON w.id = k.wallet_id`;

type KeyRow = ApiKeyResource & { created_key: string };

function toKeyResource({ created_key: _, ...key }: KeyRow): ApiKeyResource {
  return key;
}

/** GET /admin/v1/keys/{id}: the key as the operator sees it, with the limits in effect and its live sessions. */
export async function getKey({
  ctx,
  input,
}: {
  ctx: Pick<AppContext, 'db' | 'config'>;
  input: { keyId: string };
}): Promise<ApiKeyResource> {
  if (!isPossibleId(input.keyId)) throw errors.keyNotFound();
  const { KEY_MAX_LIVE_SESSIONS, KEY_MAX_CREATES_PER_MINUTE } = ctx.config;
  const { rows } = await ctx.db.pool.query<KeyRow>(`${KEY_SELECT} WHERE k.id = $3`, [
    KEY_MAX_LIVE_SESSIONS,
    KEY_MAX_CREATES_PER_MINUTE,
    input.keyId,
  ]);
  const key = rows[0];
  if (!key) throw errors.keyNotFound();
  return toKeyResource(key);
}

/** GET /admin/v1/keys: newest first, filtered by wallet and revocation. */
export async function listKeys({
  ctx,
  input,
}: {
  ctx: Pick<AppContext, 'db' | 'config'>;
  input: ListKeysQuery;
}): Promise<AdminListPage<ApiKeyResource>> {
  const limit = input.limit ?? LIST_DEFAULT_LIMIT;
  const after = decodeTimeCursor(input.after);
  const { KEY_MAX_LIVE_SESSIONS, KEY_MAX_CREATES_PER_MINUTE } = ctx.config;
  const { rows } = await ctx.db.pool.query<KeyRow>(
    `${KEY_SELECT}
      WHERE ($3::text IS NULL OR k.wallet_id = $3)
        AND ($4::boolean IS NULL OR (k.revoked_at IS NOT NULL) = $4)
        AND ($5::timestamptz IS NULL OR (k.created_at, k.id) < ($5::timestamptz, $6::text))
      ORDER BY k.created_at DESC, k.id DESC
      LIMIT $7`,
    [
      KEY_MAX_LIVE_SESSIONS,
      KEY_MAX_CREATES_PER_MINUTE,
      input.wallet_id ?? null,
      input.revoked ?? null,
      after?.[0] ?? null,
      after?.[1] ?? null,
      limit + 1,
    ],
  );
  return toPage(rows, limit, toKeyResource, (r) => [r.created_key, r.id]);
}

/**
 * PATCH /admin/v1/keys/{id}: changes only the fields the body names; `null` returns a limit to the
 * gateway's default. The key's next create already sees it.
 */
export async function updateKey({
  ctx,
  input,
}: {
  ctx: Pick<AppContext, 'db' | 'config'>;
  input: { keyId: string; patch: UpdateKeyRequest };
}): Promise<ApiKeyResource> {
  if (!isPossibleId(input.keyId)) throw errors.keyNotFound();
  const { patch } = input;
  const { rowCount } = await ctx.db.pool.query(
    `UPDATE api_keys
        SET max_live_sessions = CASE WHEN $2 THEN $3::int ELSE max_live_sessions END,
            max_creates_per_minute = CASE WHEN $4 THEN $5::int ELSE max_creates_per_minute END,
            label = CASE WHEN $6 THEN $7::text ELSE label END
      WHERE id = $1`,
    [
      input.keyId,
      patch.max_live_sessions !== undefined,
      patch.max_live_sessions ?? null,
      patch.max_creates_per_minute !== undefined,
      patch.max_creates_per_minute ?? null,
      patch.label !== undefined,
      patch.label ?? null,
    ],
  );
  if (rowCount === 0) throw errors.keyNotFound();
  return getKey({ ctx, input: { keyId: input.keyId } });
}
