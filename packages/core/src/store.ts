import type { Capabilities, EndCause, Rate, SessionStatus, TerminalStatus } from '@s2s/contract';
import type { Bus } from '@s2s/bus';
import type { DbOrTx, DbHandle } from '@s2s/db';
import { AppError, errors } from './errors.js';
import { bearerToken, hashApiKey, isApiKeyShaped } from './ids.js';
import type { SessionView } from './session-resource.js';
import { expiryCause, terminalStatusFor } from './status.js';

export interface AuthenticatedKey {
  keyId: string;
  walletId: string;
}

/** Resolves an `Authorization: Bearer vr_sk_...` header to its live key, or throws 401 invalid_vr_sk. */
export async function authenticateKey(db: DbOrTx, authorization: string | undefined): Promise<AuthenticatedKey> {
  const secret = bearerToken(authorization);
  if (!secret || !isApiKeyShaped(secret)) throw errors.invalidKey();
  const key = await db.apiKey.findUnique({
    where: { secretHash: hashApiKey(secret) },
    select: { id: true, walletId: true, revokedAt: true },
  });
  if (!key || key.revokedAt) throw errors.invalidKey();
  return { keyId: key.id, walletId: key.walletId };
}

/** A session as the services need it: the public view plus ownership, routing, rate and ending state. */
export interface SessionRecord extends SessionView {
  keyId: string;
  walletId: string;
  providerModel: string;
  rate: Rate;
  inputAudioTokens: number;
  outputAudioTokens: number;
  endRequestedAt: Date | null;
  endCause: EndCause | null;
  terminalStatus: TerminalStatus | null;
  settledAt: Date | null;
  legacy: boolean;
}

interface SessionRow {
  id: string;
  key_id: string;
  wallet_id: string;
  status: string;
  model_id: string;
  provider: string;
  provider_model: string;
  capabilities: Capabilities;
  rate_snapshot_id: string;
  source: string;
  per_minute: number;
  audio_in_token: number;
  audio_out_token: number;
  relay_fee_milli_cents: number;
  created_at: Date;
  last_activity_at: Date;
  idle_timeout_seconds: number;
  max_ends_at: Date;
  preauthorized_cents: number;
  reserved_cents: number;
  available_cents: number;
  audio_in_ms: number;
  audio_out_ms: number;
  input_audio_tokens: number;
  output_audio_tokens: number;
  billed_cents: number;
  trace_id: string;
  end_requested_at: Date | null;
  end_cause: string | null;
  terminal_status: string | null;
  settled_at: Date | null;
  legacy: boolean;
}

/**
 * Reads a session only when `keyId` owns it, so usage and billing fields are never read for anyone else.
 * Before settlement the usage is the sum of the attachments' newest checkpoints; after, the settled figures.
 */
async function selectOwnedSession(db: DbOrTx, sessionId: string, keyId: string): Promise<SessionRow | undefined> {
  const rows = await db.$queryRaw<SessionRow[]>`
    SELECT s.id, s.key_id, s.wallet_id, s.status, s.model_id, m.provider, m.provider_model, m.capabilities,
           s.rate_snapshot_id, r.source, r.per_minute, r.audio_in_token, r.audio_out_token, r.relay_fee_milli_cents,
           s.created_at, s.last_activity_at, s.idle_timeout_seconds, s.max_ends_at,
           s.preauthorized_cents, s.reserved_cents, (w.balance_cents - w.reserved_cents)::float8 AS available_cents,
           (CASE WHEN s.settled_at IS NULL THEN coalesce(u.audio_in_ms, 0) ELSE s.audio_in_ms END)::float8 AS audio_in_ms,
           (CASE WHEN s.settled_at IS NULL THEN coalesce(u.audio_out_ms, 0) ELSE s.audio_out_ms END)::float8 AS audio_out_ms,
           (CASE WHEN s.settled_at IS NULL THEN coalesce(u.input_audio_tokens, 0) ELSE s.input_audio_tokens END)::float8 AS input_audio_tokens,
           (CASE WHEN s.settled_at IS NULL THEN coalesce(u.output_audio_tokens, 0) ELSE s.output_audio_tokens END)::float8 AS output_audio_tokens,
           s.billed_cents, s.trace_id, s.end_requested_at, s.end_cause, s.terminal_status, s.settled_at, s.legacy
      FROM voice_sessions s
      JOIN catalog_models m ON m.id = s.model_id
      JOIN rate_snapshots r ON r.id = s.rate_snapshot_id
      JOIN wallets w ON w.id = s.wallet_id
      LEFT JOIN LATERAL (
        SELECT sum(a.audio_in_ms) AS audio_in_ms, sum(a.audio_out_ms) AS audio_out_ms,
               sum(a.input_audio_tokens) AS input_audio_tokens, sum(a.output_audio_tokens) AS output_audio_tokens
          FROM session_attachments a WHERE a.session_id = s.id
      ) u ON s.settled_at IS NULL
     WHERE s.id = ${sessionId} AND s.key_id = ${keyId}`;
  return rows[0];
}

function toRecord(r: SessionRow): SessionRecord {
  return {
    id: r.id,
    keyId: r.key_id,
    walletId: r.wallet_id,
    status: r.status as SessionStatus,
    modelId: r.model_id,
    provider: r.provider,
    providerModel: r.provider_model,
    capabilities: r.capabilities,
    rateSnapshotId: r.rate_snapshot_id,
    pricingSource: r.source,
    rate: {
      per_minute: r.per_minute,
      audio_in_token: r.audio_in_token,
      audio_out_token: r.audio_out_token,
      relay_fee_milli_cents: r.relay_fee_milli_cents,
    },
    createdAt: r.created_at,
    lastActivityAt: r.last_activity_at,
    idleTimeoutSeconds: r.idle_timeout_seconds,
    maxEndsAt: r.max_ends_at,
    preauthorizedCents: r.preauthorized_cents,
    reservedCents: r.reserved_cents,
    walletAvailableCents: r.available_cents,
    audioInMs: r.audio_in_ms,
    audioOutMs: r.audio_out_ms,
    inputAudioTokens: r.input_audio_tokens,
    outputAudioTokens: r.output_audio_tokens,
    billedCents: r.billed_cents,
    traceId: r.trace_id,
    endRequestedAt: r.end_requested_at,
    endCause: r.end_cause as EndCause | null,
    terminalStatus: r.terminal_status as TerminalStatus | null,
    settledAt: r.settled_at,
    legacy: r.legacy,
  };
}

/** The session owned by `keyId`: 401 invalid_vr_sk when another key owns it, 404 when there is none. */
export async function loadOwnedSession(db: DbOrTx, sessionId: string, keyId: string): Promise<SessionRecord> {
  const row = await selectOwnedSession(db, sessionId, keyId);
  if (row) return toRecord(row);
  const exists = await db.voiceSession.findUnique({ where: { id: sessionId }, select: { id: true } });
  throw exists ? errors.invalidKey() : errors.sessionNotFound();
}

interface LockedSession {
  status: SessionStatus;
  end_requested_at: Date | null;
  end_cause: EndCause | null;
  terminal_status: TerminalStatus | null;
  settled_at: Date | null;
  last_activity_at: Date;
  idle_timeout_seconds: number;
  max_ends_at: Date;
  db_now: Date;
}

const EXPIRY_CAUSES: ReadonlySet<EndCause> = new Set(['idle_timeout', 'max_duration']);

function stillExpired(s: LockedSession, now: Date): boolean {
  const clock = { lastActivityAt: s.last_activity_at, idleTimeoutSeconds: s.idle_timeout_seconds, maxEndsAt: s.max_ends_at };
  return expiryCause(clock, now) !== null;
}

export interface EndRequest {
  sessionId: string;
  cause: EndCause;
  terminalStatus: TerminalStatus;
  requestedAt: Date;
  /** False when an earlier end request (whose cause wins) was already recorded. */
  first: boolean;
}

/**
 * Records that a session must end (the first cause wins) and announces it on the bus so that the relay
 * holding it stops and billing settles it. An expiry cause only takes effect if the session is still
 * expired under the row lock (by `opts.now`, else the database clock); otherwise null is returned. Safe to repeat: the announcement has a fixed Msg-Id and the
 * billing sweeper re-announces requests that were recorded but never settled.
 */
export async function requestEnd(
  deps: { db: DbHandle; bus: Bus },
  sessionId: string,
  cause: EndCause,
  opts: { now?: Date } = {},
): Promise<EndRequest | null> {
  const decided = await deps.db.prisma.$transaction(async (tx) => {
    const rows = await tx.$queryRaw<LockedSession[]>`
      SELECT status, end_requested_at, end_cause, terminal_status, settled_at,
             last_activity_at, idle_timeout_seconds, max_ends_at, now() AS db_now
        FROM voice_sessions WHERE id = ${sessionId} FOR UPDATE`;
    const s = rows[0];
    if (!s) return null;
    if (s.end_requested_at && s.end_cause && s.terminal_status) {
      return { cause: s.end_cause, terminalStatus: s.terminal_status, requestedAt: s.end_requested_at, first: false };
    }
    if (s.settled_at) return null;
    // An expiry decided from an earlier read must still hold under the lock: activity may have moved it.
    if (EXPIRY_CAUSES.has(cause) && !stillExpired(s, opts.now ?? s.db_now)) return null;
    const terminalStatus = terminalStatusFor(cause, s.status);
    const [updated] = await tx.$queryRaw<{ end_requested_at: Date }[]>`
      UPDATE voice_sessions SET end_requested_at = now(), end_cause = ${cause}, terminal_status = ${terminalStatus}
       WHERE id = ${sessionId} RETURNING end_requested_at`;
    if (!updated) throw new AppError('internal_error', 'end request lost its row');
    return { cause, terminalStatus, requestedAt: updated.end_requested_at, first: true };
  });
  if (!decided) return null;
  await announceEnd(deps.bus, { sessionId, ...decided });
  return { sessionId, ...decided };
}

export async function announceEnd(bus: Bus, end: Omit<EndRequest, 'first'>): Promise<void> {
  await bus.publish(
    bus.subjects.endRequested(end.sessionId),
    {
      type: 'session.end_requested',
      version: 1,
      session_id: end.sessionId,
      cause: end.cause,
      terminal_status: end.terminalStatus,
      requested_at: end.requestedAt.getTime(),
    },
    `end:${end.sessionId}`,
  );
}
