import { createHash } from 'node:crypto';
import type { CreateSessionRequest, Rate } from '@s2s/contract';
import type { DbHandle } from '@s2s/db';
import { AppError } from './errors.js';
import { newId } from './ids.js';
import { preauthorizationCents } from './money.js';
import { loadOwnedSession, type AuthenticatedKey, type SessionRecord } from './store.js';

/** The per-deployment settings a new session snapshots (decisions.md, "Time, status and expiry" and "Money"). */
export interface SessionSettings {
  preauthMinutes: number;
  idleTimeoutSeconds: number;
  maxSeconds: number;
}

export interface CreateSessionInput {
  key: AuthenticatedKey;
  request: CreateSessionRequest;
  /** Idempotency-Key header, already validated as 1-255 printable ASCII characters. */
  idempotencyKey?: string;
  /** Sessions created by the legacy `/v1/realtime?model=` alias. */
  legacy?: boolean;
  traceId: string;
}

export interface CreatedSession {
  session: SessionRecord;
  /** True when an earlier request with the same Idempotency-Key made this session. */
  replayed: boolean;
}

export const IDEMPOTENCY_RETENTION_HOURS = 24;

export const sessionErrors = {
  modelNotFound: () => new AppError('model_not_found', 'The selected model is not available to this key.'),
  insufficientBalance: () =>
    new AppError('insufficient_wallet_balance', 'The wallet cannot cover the preauthorization of this session.'),
  idempotencyConflict: () =>
    new AppError('idempotency_conflict', 'This Idempotency-Key was already used with a different request.'),
};

/** What makes two create requests "the same request" for the Idempotency-Key rule. */
export function createRequestFingerprint(request: CreateSessionRequest): string {
  return createHash('sha256').update(JSON.stringify([request.model, request.mode])).digest('hex');
}

interface ModelRateRow {
  rate_snapshot_id: string;
  per_minute: number;
  audio_in_token: number;
  audio_out_token: number;
  relay_fee_milli_cents: number;
}

/**
 * Creates a `ready` session in one transaction (docs/architecture.md "Session lifecycle"): idempotency row,
 * model and its current rate, wallet reservation (402 when the available amount cannot cover it), session
 * row. Shared by `POST /v1/voice/sessions` and the legacy realtime alias so both refuse and reserve alike.
 */
export async function createSession({
  db,
  input,
  settings,
}: {
  db: DbHandle;
  input: CreateSessionInput;
  settings: SessionSettings;
}): Promise<CreatedSession> {
  const { key, request } = input;
  return db.prisma.$transaction(async (tx) => {
    const sessionId = newId('vs');
    if (input.idempotencyKey !== undefined) {
      const fingerprint = createRequestFingerprint(request);
      // A row older than the retention window is taken over as if it did not exist.
      const claimed = await tx.$queryRaw<{ session_id: string }[]>`
        INSERT INTO idempotency_keys (key_id, idempotency_key, fingerprint, session_id)
        VALUES (${key.keyId}, ${input.idempotencyKey}, ${fingerprint}, ${sessionId})
        ON CONFLICT (key_id, idempotency_key) DO UPDATE
          SET fingerprint = EXCLUDED.fingerprint, session_id = EXCLUDED.session_id, created_at = now()
          WHERE idempotency_keys.created_at < now() - make_interval(hours => ${IDEMPOTENCY_RETENTION_HOURS})
        RETURNING session_id`;
      if (claimed.length === 0) {
        // A concurrent duplicate waited on the unique index above, so the first one is committed by now.
        const [existing] = await tx.$queryRaw<{ fingerprint: string; session_id: string }[]>`
          SELECT fingerprint, session_id FROM idempotency_keys
           WHERE key_id = ${key.keyId} AND idempotency_key = ${input.idempotencyKey}`;
        if (!existing) throw new AppError('internal_error', 'idempotency row vanished');
        if (existing.fingerprint !== fingerprint) throw sessionErrors.idempotencyConflict();
        return { session: await loadOwnedSession(tx, existing.session_id, key.keyId), replayed: true };
      }
    }

    // Listed models only: enabled, approved, priced and speech-to-speech capable (api-v1 §4 rule 1).
    const [model] = await tx.$queryRaw<ModelRateRow[]>`
      SELECT r.id AS rate_snapshot_id, r.per_minute, r.audio_in_token, r.audio_out_token, r.relay_fee_milli_cents
        FROM catalog_models m JOIN rate_snapshots r ON r.id = m.current_rate_id
       WHERE m.id = ${request.model} AND m.enabled AND m.approved
         AND coalesce((m.capabilities ->> 'speech_to_speech')::boolean, false)`;
    if (!model) throw sessionErrors.modelNotFound();
    const rate: Rate = {
      per_minute: model.per_minute,
      audio_in_token: model.audio_in_token,
      audio_out_token: model.audio_out_token,
      relay_fee_milli_cents: model.relay_fee_milli_cents,
    };
    const preauth = preauthorizationCents(rate, settings.preauthMinutes);

    const reserved = await tx.$executeRaw`
      UPDATE wallets SET reserved_cents = reserved_cents + ${preauth}, updated_at = now()
       WHERE id = ${key.walletId} AND balance_cents - reserved_cents >= ${preauth}`;
    if (reserved === 0) throw sessionErrors.insufficientBalance();

    await tx.$executeRaw`
      INSERT INTO voice_sessions (id, key_id, wallet_id, model_id, rate_snapshot_id, status, preauthorized_cents,
                                  reserved_cents, trace_id, idle_timeout_seconds, max_ends_at, legacy)
      VALUES (${sessionId}, ${key.keyId}, ${key.walletId}, ${request.model}, ${model.rate_snapshot_id}, 'ready',
              ${preauth}, ${preauth}, ${input.traceId}, ${settings.idleTimeoutSeconds},
              now() + make_interval(secs => ${settings.maxSeconds}), ${input.legacy ?? false})`;
    return { session: await loadOwnedSession(tx, sessionId, key.keyId), replayed: false };
  });
}
