import {
  Capabilities,
  PROVIDER_SESSION_FIELDS,
  sessionFieldsOf,
  type CreateSessionRequest,
  type RealtimeSessionSettings,
} from '@s2s/contract';
import {
  AppError,
  errors,
  IDEMPOTENCY_RETENTION_HOURS,
  newId,
  preauthorizationCents,
  requestFingerprint,
  ZERO_USAGE,
  type AuthenticatedKey,
  type RateField,
  type SessionRecord,
} from '@s2s/core';
import { rateColumns, rateFromRow, rateRowShape, sqlStatement, type DbHandle, type Statement } from '@s2s/db';
import { z } from 'zod';
import type { SessionsDbContext } from './context.js';
import { readOwnedSession } from './get.js';

/**
 * The deployment's session policy, which a new session snapshots (decisions.md, "Time, status and expiry" and
 * "Money"); not the voice settings a client asks for (those are the relay's `VoiceSettings`).
 */
export interface SessionPolicy {
  preauthMinutes: number;
  idleTimeoutSeconds: number;
  maxSeconds: number;
  /**
   * Wait for the WAL flush of each create (default true). Off, a database crash can lose the sessions created
   * in its last few hundred milliseconds, each together with its reservation; no money moves at creation.
   */
  syncCommit?: boolean;
  /** Limits of a key without its own (decisions.md, "Limits"); absent: DEFAULT_KEY_LIMITS. */
  keyLimits?: KeyLimitDefaults;
}

export interface KeyLimitDefaults {
  maxLiveSessions: number;
  maxCreatesPerMinute: number;
}

/** KEY_MAX_LIVE_SESSIONS and KEY_MAX_CREATES_PER_MINUTE when unset: against a client stuck in a loop. */
export const DEFAULT_KEY_LIMITS: Readonly<KeyLimitDefaults> = Object.freeze({ maxLiveSessions: 1000, maxCreatesPerMinute: 6000 });

/** Retry-After of a create refused for max_live_sessions: a session ends when its client ends it. */
export const LIVE_LIMIT_RETRY_AFTER_SECONDS = 5;

/** A reservation no wallet can cover (balances stop at 2^53 - 1), sent instead of a larger preauthorization. */
const UNCOVERABLE_CENTS = 2 ** 53;

export interface CreateSessionInput {
  /** An authenticated key, or the SHA-256 of a presented secret (checked inside the create statement). */
  key: AuthenticatedKey | { secretHash: string };
  request: CreateSessionRequest;
  /** Idempotency-Key header, already validated as 1-255 printable ASCII characters. */
  idempotencyKey?: string | undefined;
  /** Sessions created by the legacy `/v1/realtime?model=` alias (they also end with their socket). */
  legacy?: boolean;
  /** Sessions created by POST /v1/realtime/client_secrets: they end with their socket and keep these settings. */
  clientSecretSettings?: RealtimeSessionSettings;
  traceId: string;
  policy: SessionPolicy;
}

export interface CreatedSession {
  session: SessionRecord;
  /** True when an earlier request with the same Idempotency-Key made this session. */
  replayed: boolean;
}

/**
 * The whole create in one statement (one round trip, one implicit transaction): authenticate the key,
 * read any Idempotency-Key record, check the model is listed at the expected rate, reserve the
 * preauthorization with a conditional UPDATE, record the Idempotency-Key, insert the session.
 * The Idempotency-Key INSERT has no ON CONFLICT on purpose: a duplicate aborts the statement, reservation
 * included, after waiting for the first writer (it holds the wallet row until commit).
 * `cfg` sets synchronous_commit for this transaction only ($9).
 * Per-key limits live on the wallet row the reservation updates anyway (docs/architecture.md "Per-key
 * limits"): the same conditional UPDATE checks and counts them, so a refusal reserves and counts nothing.
 * `ws` reads that row as of the statement's snapshot only to tell the caller why nothing was reserved.
 * A client secret's `reasoning` or `prompt` reserves only on a model whose provider honours it ($15, the
 * providers that do; NULL without such a field).
 *
 * It locks as few relations as it can (docs/architecture.md, "The create statement"; test/create-locks.test.ts):
 * PostgreSQL 15 keeps 16 per backend on its fast path, and past them every concurrent create queues on the
 * shared lock table. So without an Idempotency-Key the statement names no idempotency table (`idempotent`
 * false: no `e`, no `i`), and it reads no rate snapshot: the rate comes from the caller's cache of immutable
 * snapshots (`rateSnapshot`), refreshed when the model's current rate is not the one guessed ($3).
 */
function createSql(idempotent: boolean): string {
  return `
WITH cfg AS (
  SELECT set_config('synchronous_commit', $9::text, true)
), k AS (
  SELECT id, wallet_id, coalesce(max_live_sessions, $12::int) AS max_live,
         coalesce(max_creates_per_minute, $13::int) AS max_rate
    FROM api_keys
   WHERE (secret_hash = $1::text OR id = $11::text) AND revoked_at IS NULL
), ws AS (
  SELECT (balance_cents - reserved_cents)::float8 AS available, (sessions_created - sessions_ended)::float8 AS live,
         extract(epoch FROM greatest(create_rate_tat, now()) - now())::float8 AS rate_ahead_s
    FROM wallets WHERE id = (SELECT wallet_id FROM k)
)${
    idempotent
      ? `, e AS (
  SELECT i.fingerprint, i.session_id, i.created_at < now() - make_interval(hours => ${IDEMPOTENCY_RETENTION_HOURS}) AS stale
    FROM idempotency_keys i JOIN k ON i.key_id = k.id
   WHERE i.idempotency_key = $16::text
)`
      : ''
  }, m AS (
  SELECT id, provider, provider_model, capabilities, current_rate_id AS rate_id
    FROM catalog_models
   WHERE id = $2 AND enabled AND approved AND capabilities->>'speech_to_speech' = 'true' AND current_rate_id IS NOT NULL
), w AS (
  UPDATE wallets SET reserved_cents = reserved_cents + $4::bigint, updated_at = now(),
         sessions_created = sessions_created + 1,
         create_rate_tat = greatest(create_rate_tat, now()) + make_interval(secs => 60.0 / (SELECT max_rate FROM k))
   WHERE id = (SELECT wallet_id FROM k)${idempotent ? '\n     AND NOT EXISTS (SELECT 1 FROM e)' : ''}
     AND EXISTS (SELECT 1 FROM m WHERE m.rate_id = $3::text)
     AND balance_cents - reserved_cents >= $4::bigint
     AND sessions_created - sessions_ended < (SELECT max_live FROM k)
     AND greatest(create_rate_tat, now()) - now() <= make_interval(secs => 60 - 60.0 / (SELECT max_rate FROM k))
     AND ($15::text[] IS NULL OR EXISTS (SELECT 1 FROM m WHERE m.provider = ANY($15::text[])))
  RETURNING id, (balance_cents - reserved_cents)::float8 AS available_cents
)${
    idempotent
      ? `, i AS (
  INSERT INTO idempotency_keys (key_id, idempotency_key, fingerprint, session_id)
  SELECT k.id, $16::text, $17::text, $5::text FROM k, w
)`
      : ''
  }, s AS (
  INSERT INTO voice_sessions (id, key_id, wallet_id, model_id, rate_snapshot_id, status, preauthorized_cents,
                              reserved_cents, trace_id, idle_timeout_seconds, max_ends_at, legacy,
                              ends_with_socket, initial_settings)
  SELECT $5::text, k.id, w.id, m.id, m.rate_id, 'ready', $4::bigint, $4::bigint, $6::text, $7::int,
         now() + make_interval(secs => $8::int), $10::boolean, $10::boolean OR $14::jsonb IS NOT NULL, $14::jsonb
    FROM k, w, m
  RETURNING created_at, last_activity_at, max_ends_at
)
SELECT k.id AS key_id, k.wallet_id, k.max_live, k.max_rate, ws.available, ws.live, ws.rate_ahead_s,
       ${idempotent ? 'e.fingerprint AS idem_fingerprint, e.session_id AS idem_session_id, e.stale AS idem_stale' : 'NULL AS idem_fingerprint, NULL AS idem_session_id, NULL AS idem_stale'},
       m.id AS model_id, m.provider, m.provider_model, m.capabilities, m.rate_id,
       w.available_cents, s.created_at, s.last_activity_at, s.max_ends_at
  FROM cfg, k LEFT JOIN ws ON true${idempotent ? ' LEFT JOIN e ON true' : ''} LEFT JOIN m ON true LEFT JOIN w ON true LEFT JOIN s ON true`;
}

/** The row of the create statement with an Idempotency-Key. */
const CREATE_ROW = z.object({
  key_id: z.string(),
  wallet_id: z.string(),
  max_live: z.number(),
  max_rate: z.number(),
  available: z.number().nullable(),
  live: z.number().nullable(),
  rate_ahead_s: z.number().nullable(),
  idem_fingerprint: z.string().nullable(),
  idem_session_id: z.string().nullable(),
  idem_stale: z.boolean().nullable(),
  model_id: z.string().nullable(),
  provider: z.string().nullable(),
  provider_model: z.string().nullable(),
  capabilities: Capabilities.nullable(),
  rate_id: z.string().nullable(),
  available_cents: z.number().nullable(),
  created_at: z.date().nullable(),
  last_activity_at: z.date().nullable(),
  max_ends_at: z.date().nullable(),
});
type CreateRow = z.infer<typeof CREATE_ROW>;

/** Without an Idempotency-Key the `idem_` columns are bare NULLs, which PostgreSQL types as text. */
const CREATE_ROW_WITHOUT_KEY = CREATE_ROW.extend({ idem_fingerprint: z.null(), idem_session_id: z.null(), idem_stale: z.null() });

const CREATE_SESSION = sqlStatement(import.meta.url, { name: 'core_create_session', text: createSql(false), row: CREATE_ROW_WITHOUT_KEY });
const CREATE_IDEMPOTENT_SESSION = sqlStatement(import.meta.url, {
  name: 'core_create_idempotent_session',
  text: createSql(true),
  row: CREATE_ROW,
});

const RATE_SNAPSHOT = sqlStatement(import.meta.url, {
  name: 'core_rate_snapshot',
  text: `SELECT source, ${rateColumns('r')} FROM rate_snapshots r WHERE id = $1`,
  row: z.object({ source: z.string(), ...rateRowShape }),
});

/**
 * Last seen current rate of each model with its preauthorization, per database handle. Only a guess: the
 * statement reserves nothing unless the model's current rate is still this one, and we refresh it then.
 */
interface RateGuess {
  rateId: string;
  preauthCents: number;
  minutes: number;
  snapshot: RateSnapshot;
}

/** A rate snapshot as the session record shows it. Snapshots are immutable, so one read of each is enough. */
interface RateSnapshot {
  rate: Record<RateField, number>;
  source: string;
}

interface CreateCaches {
  guesses: Map<string, RateGuess>;
  snapshots: Map<string, RateSnapshot>;
}
const caches = new WeakMap<DbHandle, CreateCaches>();

function cachesOf(db: DbHandle): CreateCaches {
  let found = caches.get(db);
  if (!found) caches.set(db, (found = { guesses: new Map(), snapshots: new Map() }));
  return found;
}

async function rateSnapshot(db: DbHandle, cache: Map<string, RateSnapshot>, rateId: string): Promise<RateSnapshot> {
  const known = cache.get(rateId);
  if (known) return known;
  const { rows } = await RATE_SNAPSHOT.run(db.pool, [rateId]);
  const row = rows[0];
  // The model's current rate names it, and snapshots are never deleted.
  if (!row) throw new AppError('internal_error', `rate snapshot ${rateId} is missing`);
  const snapshot = { rate: rateFromRow(row), source: row.source };
  cache.set(rateId, snapshot);
  return snapshot;
}

const MAX_ATTEMPTS = 4;

/**
 * The create statement with its parameters, as `createSession` sends it (a named prepared statement); exported
 * so that the control plane's benchmark can run the very same statement through pgbench as its baseline.
 */
export function createStatement(
  input: CreateSessionInput,
  sessionId: string,
  guess: { rateId: string; preauthCents: number } | undefined,
  fingerprint: string | null,
): { name: string; text: string; values: unknown[] } {
  const { statement, values } = createQuery(input, sessionId, guess, fingerprint);
  return { name: statement.name ?? '', text: statement.text, values };
}

/** The create statement that fits the input (with or without an Idempotency-Key) and its parameters. */
function createQuery(
  input: CreateSessionInput,
  sessionId: string,
  guess: { rateId: string; preauthCents: number } | undefined,
  fingerprint: string | null,
): { statement: Statement<typeof CREATE_ROW> | Statement<typeof CREATE_ROW_WITHOUT_KEY>; values: unknown[] } {
  const { policy } = input;
  const limits = policy.keyLimits ?? DEFAULT_KEY_LIMITS;
  const values: unknown[] = [
    'secretHash' in input.key ? input.key.secretHash : null,
    input.request.model,
    guess?.rateId ?? null,
    Math.min(guess?.preauthCents ?? 0, UNCOVERABLE_CENTS),
    sessionId,
    input.traceId,
    policy.idleTimeoutSeconds,
    policy.maxSeconds,
    policy.syncCommit === false ? 'off' : 'on',
    input.legacy ?? false,
    'keyId' in input.key ? input.key.keyId : null,
    limits.maxLiveSessions,
    limits.maxCreatesPerMinute,
    input.clientSecretSettings === undefined ? null : JSON.stringify(input.clientSecretSettings),
    honouringProviders(answerFieldsOf(input.clientSecretSettings)),
  ];
  if (input.idempotencyKey === undefined || fingerprint === null) return { statement: CREATE_SESSION, values };
  return { statement: CREATE_IDEMPOTENT_SESSION, values: [...values, input.idempotencyKey, fingerprint] };
}

/**
 * Creates a `ready` session (docs/architecture.md "Session lifecycle"), shared by `POST /v1/voice/sessions`
 * and the legacy realtime alias so both refuse and reserve alike. Checks, in order: key (401),
 * Idempotency-Key replay or conflict (replay / 409), the key's limits (429), model listed (404), wallet covers
 * the preauthorization (402); a client secret's `reasoning` or `prompt` where the model's provider cannot honour
 * it (400 naming the param; decisions.md, "Current OpenAI session fields") is refused before anything is reserved.
 */
export async function createSession({ ctx, input }: { ctx: SessionsDbContext; input: CreateSessionInput }): Promise<CreatedSession> {
  const { db } = ctx;
  const { policy } = input;
  const fingerprint = input.idempotencyKey === undefined ? null : requestFingerprint(input.request);
  const { guesses, snapshots } = cachesOf(db);
  const modelId = input.request.model;
  const byHash = 'secretHash' in input.key ? input.key.secretHash : null;
  const byId = 'keyId' in input.key ? input.key.keyId : null;

  for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
    const cached = guesses.get(modelId);
    const guess = cached?.minutes === policy.preauthMinutes ? cached : undefined;
    const sessionId = newId('vs');
    let row: CreateRow | undefined;
    try {
      const { statement, values } = createQuery(input, sessionId, guess, fingerprint);
      const result = await statement.run(db.pool, values);
      row = result.rows[0];
    } catch (err) {
      if (!isIdempotencyRace(err) || input.idempotencyKey === undefined || fingerprint === null) throw err;
      // A concurrent request with the same key committed first: answer with its session.
      const keyId = await keyIdOf(db, byHash, byId);
      const replay = await resolveIdempotency(db, { keyId, key: input.idempotencyKey, fingerprint });
      if (replay) return { session: replay, replayed: true };
      continue;
    }

    if (!row) throw errors.invalidKey();
    if (row.idem_session_id !== null && input.idempotencyKey !== undefined && fingerprint !== null) {
      const replay = await resolveIdempotency(db, {
        keyId: row.key_id,
        key: input.idempotencyKey,
        fingerprint,
        record: { fingerprint: row.idem_fingerprint ?? '', session_id: row.idem_session_id, stale: row.idem_stale === true },
      });
      if (replay) return { session: replay, replayed: true };
      continue;
    }
    if (guess !== undefined && row.created_at !== null) {
      return { session: createdRecord(row, sessionId, guess, input), replayed: false };
    }
    const limited = limitRefusal(row);
    if (limited) throw limited;
    if (row.rate_id === null) {
      guesses.delete(modelId);
      throw errors.modelNotFound();
    }
    const refused = sessionFieldRefusal(row.provider ?? '', answerFieldsOf(input.clientSecretSettings));
    if (refused) throw refused;
    if (row.rate_id !== guess?.rateId) {
      const snapshot = await rateSnapshot(db, snapshots, row.rate_id);
      const preauthCents = preauthorizationCents(snapshot.rate, policy.preauthMinutes);
      guesses.set(modelId, { rateId: row.rate_id, preauthCents, minutes: policy.preauthMinutes, snapshot });
      continue;
    }
    if (row.available === null || row.available < guess.preauthCents) throw errors.insufficientBalance();
    // The snapshot allowed it but the locked row did not: a concurrent create took the last place or funds.
  }
  throw new AppError('internal_error', 'session creation did not settle after repeated rate or idempotency races');
}

/**
 * 429 when the wallet row, as of the statement's snapshot, shows a limit reached. The snapshot is never
 * newer than the locked row, so it refuses no create the row would allow for long; a refusal it misses
 * shows up on the next attempt.
 */
function limitRefusal(row: CreateRow): AppError | null {
  if (row.live !== null && row.live >= row.max_live) {
    return errors.rateLimitExceeded(
      `This key has ${row.max_live} live sessions, its max_live_sessions; end one or ask for a higher limit.`,
      LIVE_LIMIT_RETRY_AFTER_SECONDS,
    );
  }
  const burstS = 60 - 60 / row.max_rate;
  if (row.rate_ahead_s !== null && row.rate_ahead_s > burstS) {
    return errors.rateLimitExceeded(
      `This key created sessions faster than its max_creates_per_minute (${row.max_rate}); retry after the Retry-After delay.`,
      Math.max(1, Math.ceil(row.rate_ahead_s - burstS)),
    );
  }
  return null;
}

function createdRecord(row: CreateRow, id: string, guess: RateGuess, input: CreateSessionInput): SessionRecord {
  const preauth = guess.preauthCents;
  const { policy } = input;
  return {
    id,
    keyId: row.key_id,
    walletId: row.wallet_id,
    status: 'ready',
    modelId: row.model_id ?? input.request.model,
    provider: row.provider ?? '',
    providerModel: row.provider_model ?? '',
    capabilities: row.capabilities as Capabilities,
    rateSnapshotId: guess.rateId,
    pricingSource: guess.snapshot.source,
    rate: guess.snapshot.rate,
    createdAt: row.created_at as Date,
    lastActivityAt: row.last_activity_at as Date,
    idleTimeoutSeconds: policy.idleTimeoutSeconds,
    maxEndsAt: row.max_ends_at as Date,
    preauthorizedCents: preauth,
    reservedCents: preauth,
    walletAvailableCents: row.available_cents ?? 0,
    usage: ZERO_USAGE,
    // Nothing used yet, by any route (the same as a read before the first attachment says).
    usageRoutes: [],
    billedCents: 0,
    traceId: input.traceId,
    endRequestedAt: null,
    endCause: null,
    terminalStatus: null,
    settledAt: null,
    legacy: input.legacy ?? false,
    endsWithSocket: (input.legacy ?? false) || input.clientSecretSettings !== undefined,
    initialSettings: input.clientSecretSettings ?? null,
  };
}

/** The session fields that change the answer: refused where the model's provider cannot honour them. */
const ANSWER_FIELDS = { reasoning: 'Reasoning', prompt: 'A stored prompt' } as const;
type AnswerField = keyof typeof ANSWER_FIELDS;

/** The answer-changing fields a client secret's settings ask for (`prompt: null` asks for none). */
function answerFieldsOf(settings: RealtimeSessionSettings | undefined): AnswerField[] {
  if (settings === undefined) return [];
  return (Object.keys(ANSWER_FIELDS) as AnswerField[]).filter((field) => settings[field] !== undefined && settings[field] !== null);
}

/** The providers that honour every one of `fields`; null when there is none to honour. */
function honouringProviders(fields: AnswerField[]): string[] | null {
  if (fields.length === 0) return null;
  return Object.entries(PROVIDER_SESSION_FIELDS)
    .filter(([, can]) => fields.every((field) => can[field]))
    .map(([provider]) => provider);
}

function sessionFieldRefusal(provider: string, fields: AnswerField[]): AppError | null {
  const can = sessionFieldsOf(provider);
  const field = fields.find((f) => !can[f]);
  if (field === undefined) return null;
  return errors.invalidRequest(
    `session.${field}: ${ANSWER_FIELDS[field]} is not supported by this model's provider (GET /v1/models: capabilities.session_fields).`,
  );
}

function isIdempotencyRace(err: unknown): boolean {
  const e = err as { code?: unknown; constraint?: unknown };
  return e?.code === '23505' && e.constraint === 'idempotency_keys_pkey';
}

const IDEMPOTENCY_RECORD = sqlStatement(import.meta.url, {
  text: `SELECT fingerprint, session_id, created_at < now() - make_interval(hours => ${IDEMPOTENCY_RETENTION_HOURS}) AS stale
         FROM idempotency_keys WHERE key_id = $1 AND idempotency_key = $2`,
  row: z.object({ fingerprint: z.string(), session_id: z.string(), stale: z.boolean() }),
});
type IdempotencyRecord = z.infer<typeof IDEMPOTENCY_RECORD.row>;

const KEY_ID = sqlStatement(import.meta.url, {
  text: 'SELECT id FROM api_keys WHERE (secret_hash = $1::text OR id = $2::text) AND revoked_at IS NULL',
  row: z.object({ id: z.string() }),
});

/**
 * The session an Idempotency-Key already names (a replay), or null when there is no live record and the
 * create should run again (an expired record is deleted first). A different body is 409.
 */
async function resolveIdempotency(
  db: DbHandle,
  q: { keyId: string; key: string; fingerprint: string; record?: IdempotencyRecord },
): Promise<SessionRecord | null> {
  let record = q.record;
  if (!record) {
    const { rows } = await IDEMPOTENCY_RECORD.run(db.pool, [q.keyId, q.key]);
    record = rows[0];
  }
  if (!record) return null;
  if (record.stale) {
    // The billing sweeper deletes records after 24 h; until then an old one counts as absent.
    await db.pool.query(
      `DELETE FROM idempotency_keys WHERE key_id = $1 AND idempotency_key = $2
          AND created_at < now() - make_interval(hours => ${IDEMPOTENCY_RETENTION_HOURS})`,
      [q.keyId, q.key],
    );
    return null;
  }
  if (record.fingerprint !== q.fingerprint) throw errors.idempotencyConflict();
  return readOwnedSession(db.pool, { sessionId: record.session_id, keyId: q.keyId });
}

async function keyIdOf(db: DbHandle, secretHash: string | null, keyId: string | null): Promise<string> {
  const { rows } = await KEY_ID.run(db.pool, [secretHash, keyId]);
  const id = rows[0]?.id;
  if (id === undefined) throw errors.invalidKey();
  return id;
}
