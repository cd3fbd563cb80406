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
import { exactNumber, prismaOf, type Prisma } from '@s2s/db/prisma';
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
  const balance = BigInt(input.balance_cents);
  // One nested create: the wallet, its credit and the key commit together.
  await prismaOf(ctx.db).wallet.create({
    data: {
      id: walletId,
      balanceCents: balance,
      ...(input.balance_cents > 0 ? { ledger: { create: { kind: 'credit', amountCents: balance } } } : {}),
      keys: {
        create: {
          id: keyId,
          secretHash: issued.hash,
          prefix: issued.displayPrefix,
          label: input.label ?? null,
          maxLiveSessions: input.max_live_sessions ?? null,
          maxCreatesPerMinute: input.max_creates_per_minute ?? null,
        },
      },
    },
    select: { id: true },
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
  const prisma = prismaOf(ctx.db);
  // A key revoked before keeps its first revocation time.
  const { count } = await prisma.apiKey.updateMany({ where: { id: input.keyId, revokedAt: null }, data: { revokedAt: new Date() } });
  if (count === 0 && (await prisma.apiKey.count({ where: { id: input.keyId } })) === 0) throw errors.keyNotFound();
  return { id: input.keyId, revoked: true };
}

/** A key as the operator sees it: its columns and its wallet's session counters. */
const KEY = {
  id: true,
  walletId: true,
  label: true,
  prefix: true,
  revokedAt: true,
  createdAt: true,
  maxLiveSessions: true,
  maxCreatesPerMinute: true,
  wallet: { select: { sessionsCreated: true, sessionsEnded: true } },
} as const;
type KeyRow = Prisma.ApiKeyGetPayload<{ select: typeof KEY }>;

/** The key with the limits in effect (its own, or the gateway's default) and its live sessions. */
function toKeyResource(
  k: KeyRow,
  config: Pick<AppContext['config'], 'KEY_MAX_LIVE_SESSIONS' | 'KEY_MAX_CREATES_PER_MINUTE'>,
): ApiKeyResource {
  const live = k.wallet.sessionsCreated - k.wallet.sessionsEnded;
  return {
    id: k.id,
    wallet_id: k.walletId,
    label: k.label,
    prefix: k.prefix,
    revoked: k.revokedAt !== null,
    created_at: Math.floor(k.createdAt.getTime() / 1000),
    max_live_sessions: k.maxLiveSessions ?? config.KEY_MAX_LIVE_SESSIONS,
    max_creates_per_minute: k.maxCreatesPerMinute ?? config.KEY_MAX_CREATES_PER_MINUTE,
    live_sessions: live > 0n ? exactNumber(live) : 0,
  };
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
  const key = await prismaOf(ctx.db).apiKey.findUnique({ where: { id: input.keyId }, select: KEY });
  if (!key) throw errors.keyNotFound();
  return toKeyResource(key, ctx.config);
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
  const before = after ? new Date(after[0]) : undefined;
  const rows = await prismaOf(ctx.db).apiKey.findMany({
    where: {
      ...(input.wallet_id === undefined ? {} : { walletId: input.wallet_id }),
      ...(input.revoked === undefined ? {} : { revokedAt: input.revoked ? { not: null } : null }),
      // Keyset: (created_at, id) before the cursor's.
      ...(after && before ? { OR: [{ createdAt: { lt: before } }, { createdAt: before, id: { lt: after[1] } }] } : {}),
    },
    orderBy: [{ createdAt: 'desc' }, { id: 'desc' }],
    take: limit + 1,
    select: KEY,
  });
  return toPage(
    rows,
    limit,
    (r) => toKeyResource(r, ctx.config),
    (r) => [r.createdAt.toISOString(), r.id],
  );
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
  const data = {
    ...(patch.max_live_sessions === undefined ? {} : { maxLiveSessions: patch.max_live_sessions }),
    ...(patch.max_creates_per_minute === undefined ? {} : { maxCreatesPerMinute: patch.max_creates_per_minute }),
    ...(patch.label === undefined ? {} : { label: patch.label }),
  };
  if (Object.keys(data).length > 0) {
    const { count } = await prismaOf(ctx.db).apiKey.updateMany({ where: { id: input.keyId }, data });
    if (count === 0) throw errors.keyNotFound();
  }
  return getKey({ ctx, input: { keyId: input.keyId } });
}
