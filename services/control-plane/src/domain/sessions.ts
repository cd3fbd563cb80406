import type { Capabilities, CreateSessionRequest, Rate, VoiceSession } from '@s2s/contract';
import {
  authenticateKey,
  errors,
  expiryCause,
  hashApiKey,
  loadOwnedSession,
  newId,
  preauthorizationCents,
  requestEnd,
  sessionErrors,
  toVoiceSession,
  bearerToken,
  isApiKeyShaped,
  type SessionRecord,
} from '@s2s/core';
import type { AppContext } from '../context.js';
import { requestFingerprint } from './idempotency.js';

/**
 * The whole create in one statement (one round trip, one implicit transaction): authenticate the key,
 * read any Idempotency-Key record, check the model is listed at the expected rate, reserve the
 * preauthorization with a conditional UPDATE, record the Idempotency-Key, insert the session.
 * The Idempotency-Key INSERT has no ON CONFLICT on purpose: a duplicate aborts the statement, reservation
 * included, after waiting for the first writer (it holds the wallet row until commit); see createSession.
 * `cfg` sets synchronous_commit for this transaction only ($11; why: docs/benchmarks.md, "Control plane").
 */
const CREATE_SESSION_SQL = `
WITH cfg AS (
  SELECT set_config('synchronous_commit', $11::text, true)
), k AS (
  SELECT id, wallet_id FROM api_keys WHERE secret_hash = $1 AND revoked_at IS NULL
), e AS (
  SELECT i.fingerprint, i.session_id, i.created_at < now() - interval '24 hours' AS stale
    FROM idempotency_keys i JOIN k ON i.key_id = k.id
   WHERE $9::text IS NOT NULL AND i.idempotency_key = $9::text
), m AS (
  SELECT m.id, m.provider, m.capabilities, r.id AS rate_id, r.source,
         r.per_minute, r.audio_in_token, r.audio_out_token, r.relay_fee_milli_cents
    FROM catalog_models m JOIN rate_snapshots r ON r.id = m.current_rate_id
   WHERE m.id = $2 AND m.enabled AND m.approved AND m.capabilities->>'speech_to_speech' = 'true'
), w AS (
  UPDATE wallets SET reserved_cents = reserved_cents + $4::int, updated_at = now()
   WHERE id = (SELECT wallet_id FROM k)
     AND NOT EXISTS (SELECT 1 FROM e)
     AND EXISTS (SELECT 1 FROM m WHERE m.rate_id = $3::text)
     AND balance_cents - reserved_cents >= $4::int
  RETURNING id, (balance_cents - reserved_cents)::float8 AS available_cents
), i AS (
  INSERT INTO idempotency_keys (key_id, idempotency_key, fingerprint, session_id)
  SELECT k.id, $9::text, $10::text, $5::text FROM k, w WHERE $9::text IS NOT NULL
), s AS (
  INSERT INTO voice_sessions (id, key_id, wallet_id, model_id, rate_snapshot_id, status, preauthorized_cents,
                              reserved_cents, trace_id, idle_timeout_seconds, max_ends_at)
  SELECT $5::text, k.id, w.id, m.id, m.rate_id, 'ready', $4::int, $4::int, $6::text, $7::int,
         now() + make_interval(secs => $8::int)
    FROM k, w, m
  RETURNING created_at, last_activity_at, max_ends_at
)
SELECT k.id AS key_id,
       e.fingerprint AS idem_fingerprint, e.session_id AS idem_session_id, e.stale AS idem_stale,
       m.id AS model_id, m.provider, m.capabilities, m.rate_id, m.source,
       m.per_minute, m.audio_in_token, m.audio_out_token, m.relay_fee_milli_cents,
       w.available_cents, s.created_at, s.last_activity_at, s.max_ends_at
  FROM cfg, k LEFT JOIN e ON true LEFT JOIN m ON true LEFT JOIN w ON true LEFT JOIN s ON true`;

interface CreateRow {
  key_id: string;
  idem_fingerprint: string | null;
  idem_session_id: string | null;
  idem_stale: boolean | null;
  model_id: string | null;
  provider: string | null;
  capabilities: Capabilities | null;
  rate_id: string | null;
  source: string | null;
  per_minute: number | null;
  audio_in_token: number | null;
  audio_out_token: number | null;
  relay_fee_milli_cents: number | null;
  available_cents: number | null;
  created_at: Date | null;
  last_activity_at: Date | null;
  max_ends_at: Date | null;
}

const IDEMPOTENCY_LOOKUP_SQL = `
  SELECT fingerprint, session_id, created_at < now() - interval '24 hours' AS stale
    FROM idempotency_keys WHERE key_id = $1 AND idempotency_key = $2`;

// The billing sweeper deletes records after 24 h; until then an old one counts as absent.
const IDEMPOTENCY_EXPIRE_SQL = `
  DELETE FROM idempotency_keys
   WHERE key_id = $1 AND idempotency_key = $2 AND created_at < now() - interval '24 hours'`;

/**
 * Last seen current rate of each model with its preauthorization. Only a guess: the create statement
 * reserves nothing unless the model's current rate is still this one, and refreshes it otherwise.
 */
interface RateGuess {
  rateId: string;
  preauthCents: number;
}
const rateGuesses = new WeakMap<AppContext, Map<string, RateGuess>>();

function guessesOf(ctx: AppContext): Map<string, RateGuess> {
  let guesses = rateGuesses.get(ctx);
  if (!guesses) {
    guesses = new Map();
    rateGuesses.set(ctx, guesses);
  }
  return guesses;
}

export interface CreateSessionInput {
  authorization: string | undefined;
  body: CreateSessionRequest;
  idempotencyKey?: string | undefined;
  traceId: string;
}

export interface CreateSessionResult {
  session: VoiceSession;
  /** True when an earlier request with the same Idempotency-Key made the session. */
  replayed: boolean;
}

const MAX_ATTEMPTS = 4;

/**
 * POST /v1/voice/sessions after the body is valid. Checks, in order: key (401), Idempotency-Key replay
 * or conflict (201 replay / 409), model listed (404), wallet covers the preauthorization (402).
 */
export async function createSession({ ctx, input }: { ctx: AppContext; input: CreateSessionInput }): Promise<CreateSessionResult> {
  const secret = bearerToken(input.authorization);
  if (secret === null || !isApiKeyShaped(secret)) throw errors.invalidKey();
  const secretHash = hashApiKey(secret);
  const fingerprint = input.idempotencyKey === undefined ? null : requestFingerprint(input.body);
  const guesses = guessesOf(ctx);
  const modelId = input.body.model;

  for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
    const guess = guesses.get(modelId);
    const sessionId = newId('vs');
    let row: CreateRow | undefined;
    try {
      const result = await ctx.db.pool.query<CreateRow>({
        name: 'cp_create_session',
        text: CREATE_SESSION_SQL,
        values: [
          secretHash,
          modelId,
          guess?.rateId ?? null,
          guess?.preauthCents ?? 0,
          sessionId,
          input.traceId,
          ctx.config.sessionIdleTimeoutSeconds,
          ctx.config.sessionMaxSeconds,
          input.idempotencyKey ?? null,
          fingerprint,
          ctx.config.sessionCreateSyncCommit ? 'on' : 'off',
        ],
      });
      row = result.rows[0];
    } catch (err) {
      if (!isIdempotencyRace(err) || input.idempotencyKey === undefined || fingerprint === null) throw err;
      // A concurrent request with the same key committed first: answer with its session.
      const replay = await resolveIdempotency(ctx, { keyId: null, secretHash, key: input.idempotencyKey, fingerprint });
      if (replay) return { session: replay, replayed: true };
      continue;
    }

    if (!row) throw errors.invalidKey();
    if (row.idem_session_id !== null && input.idempotencyKey !== undefined && fingerprint !== null) {
      const replay = await resolveIdempotency(ctx, {
        keyId: row.key_id,
        secretHash,
        key: input.idempotencyKey,
        fingerprint,
        record: { fingerprint: row.idem_fingerprint ?? '', session_id: row.idem_session_id, stale: row.idem_stale === true },
      });
      if (replay) return { session: replay, replayed: true };
      continue;
    }
    if (row.rate_id === null) {
      guesses.delete(modelId);
      throw sessionErrors.modelNotFound();
    }
    if (row.rate_id !== guess?.rateId) {
      guesses.set(modelId, { rateId: row.rate_id, preauthCents: preauthorizationCents(rateOf(row), ctx.config.sessionPreauthMinutes) });
      continue;
    }
    if (row.available_cents === null || row.created_at === null || row.last_activity_at === null || row.max_ends_at === null) {
      throw sessionErrors.insufficientBalance();
    }
    const session = toVoiceSession(
      {
        id: sessionId,
        status: 'ready',
        modelId: row.model_id ?? modelId,
        provider: row.provider ?? '',
        capabilities: row.capabilities as Capabilities,
        rateSnapshotId: row.rate_id,
        pricingSource: row.source ?? '',
        createdAt: row.created_at,
        lastActivityAt: row.last_activity_at,
        idleTimeoutSeconds: ctx.config.sessionIdleTimeoutSeconds,
        maxEndsAt: row.max_ends_at,
        preauthorizedCents: guess.preauthCents,
        reservedCents: guess.preauthCents,
        walletAvailableCents: row.available_cents,
        audioInMs: 0,
        audioOutMs: 0,
        billedCents: 0,
        traceId: input.traceId,
      },
      ctx.config.realtimePublicUrl,
    );
    return { session, replayed: false };
  }
  throw new Error('session creation did not settle after repeated rate or idempotency races');
}

function rateOf(row: CreateRow): Rate {
  return {
    per_minute: row.per_minute ?? 0,
    audio_in_token: row.audio_in_token ?? 0,
    audio_out_token: row.audio_out_token ?? 0,
    relay_fee_milli_cents: row.relay_fee_milli_cents ?? 0,
  };
}

function isIdempotencyRace(err: unknown): boolean {
  const e = err as { code?: unknown; constraint?: unknown };
  return e?.code === '23505' && e.constraint === 'idempotency_keys_pkey';
}

interface IdempotencyRecord {
  fingerprint: string;
  session_id: string;
  stale: boolean;
}

/**
 * The session an Idempotency-Key already names (a replay), or null when there is no live record and the
 * create should run again (an expired record is deleted first). A different body is 409.
 */
async function resolveIdempotency(
  ctx: AppContext,
  q: { keyId: string | null; secretHash: string; key: string; fingerprint: string; record?: IdempotencyRecord },
): Promise<VoiceSession | null> {
  const keyId = q.keyId ?? (await keyIdOf(ctx, q.secretHash));
  let record = q.record;
  if (!record) {
    const { rows } = await ctx.db.pool.query<IdempotencyRecord>(IDEMPOTENCY_LOOKUP_SQL, [keyId, q.key]);
    record = rows[0];
  }
  if (!record) return null;
  if (record.stale) {
    await ctx.db.pool.query(IDEMPOTENCY_EXPIRE_SQL, [keyId, q.key]);
    return null;
  }
  if (record.fingerprint !== q.fingerprint) {
    throw sessionErrors.idempotencyConflict();
  }
  const session = await loadOwnedSession(ctx.db.prisma, record.session_id, keyId);
  return toVoiceSession(session, ctx.config.realtimePublicUrl);
}

async function keyIdOf(ctx: AppContext, secretHash: string): Promise<string> {
  const { rows } = await ctx.db.pool.query<{ id: string }>(
    'SELECT id FROM api_keys WHERE secret_hash = $1 AND revoked_at IS NULL',
    [secretHash],
  );
  const id = rows[0]?.id;
  if (id === undefined) throw errors.invalidKey();
  return id;
}

/** Authenticates the caller only: used to answer 401 before a body error (api-v1: auth, then body). */
export async function checkApiKey({ ctx, input }: { ctx: AppContext; input: { authorization: string | undefined } }): Promise<void> {
  await authenticateKey(ctx.db.prisma, input.authorization);
}

function isExpired(s: SessionRecord): boolean {
  return s.status === 'expired' || s.terminalStatus === 'expired';
}

/**
 * GET /v1/voice/sessions/{id}: ownership first (core loadOwnedSession), then expiry. A read past the idle
 * or maximum deadline requests the end (billing settles it) and, like any expired session, answers 410.
 */
export async function getSession({
  ctx,
  input,
}: {
  ctx: AppContext;
  input: { authorization: string | undefined; sessionId: string };
}): Promise<VoiceSession> {
  const key = await authenticateKey(ctx.db.prisma, input.authorization);
  let session = await loadOwnedSession(ctx.db.prisma, input.sessionId, key.keyId);
  if (session.settledAt === null && session.endRequestedAt === null) {
    const cause = expiryCause(session, ctx.now());
    if (cause !== null) {
      const end = await requestEnd({ db: ctx.db, bus: ctx.bus }, session.id, cause, { now: ctx.now() });
      if (end?.terminalStatus === 'expired') throw errors.sessionExpired();
      // Another ending (or settlement) won the race: answer from what the store now says.
      session = await loadOwnedSession(ctx.db.prisma, input.sessionId, key.keyId);
    }
  }
  if (isExpired(session)) throw errors.sessionExpired();
  return toVoiceSession(session, ctx.config.realtimePublicUrl);
}
