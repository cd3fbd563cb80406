// Rows made the way the control plane and the relay make them, for the tests and benchmarks of the services
// that read them (billing's tests, bench/billing): an owner with a priced model, a `ready` session through the
// real create, an attachment as the relay records it, and a version 4 usage checkpoint.
import { randomBytes } from 'node:crypto';
import { compactRoutes, type CheckpointRoute, type Rate, type UsageCheckpoint } from '@s2s/contract';
import { newId, newTraceId, usageOf, type AuthenticatedKey, type SessionRecord, type Usage } from '@s2s/core';
import type { DbHandle } from '@s2s/db';
import { createWalletAndKey, insertCurrentRate } from '@s2s/db/testing';
import { createSession, type SessionPolicy } from './create.js';

/** 6 cents a minute of audio, 0.01 / 0.02 cents per input / output token, 0.5 cent relay fee. */
export const TEST_RATE: Rate = Object.freeze({
  per_minute: 6000,
  audio_in_token: 10,
  audio_out_token: 20,
  text_in_token: 0,
  text_out_token: 0,
  cached_in_token: 0,
  transcription_per_minute: 0,
  relay_fee_milli_cents: 500,
});

/** The control plane's defaults: 10 minutes preauthorized, 5 minutes idle, an hour at most. */
export const TEST_POLICY: Readonly<SessionPolicy> = Object.freeze({ preauthMinutes: 10, idleTimeoutSeconds: 300, maxSeconds: 3600 });

export interface Owner {
  walletId: string;
  key: AuthenticatedKey;
  secret: string;
  modelId: string;
}

/** A wallet credited like the operator API does (balance and a credit ledger row), its key, and a model priced at `rate`. */
export async function createOwner(db: DbHandle, balanceCents = 10_000, rate: Rate = TEST_RATE): Promise<Owner> {
  const { walletId, keyId, secret } = await createWalletAndKey(db.pool, { balanceCents });
  const modelId = `test/m-${randomBytes(4).toString('hex')}`;
  const capabilities = {
    speech_to_speech: true,
    server_vad: true,
    barge_in: true,
    input_transcription: 'optional',
    output_transcription: 'optional',
  };
  const format = { type: 'audio/pcm', encoding: 'pcm16le', sample_rate_hz: 24000, channels: 1 };
  await db.pool.query(
    `INSERT INTO catalog_models (id, display_name, owned_by, provider, provider_model, enabled, approved, capabilities, audio, modalities)
     VALUES ($1, 'Test', 'test', 'local', 'echo', true, true, $2, $3, $4)`,
    [modelId, capabilities, { input: format, output: format }, { input: ['audio'], output: ['audio'] }],
  );
  await insertCurrentRate(db.pool, { rateId: newId('rate'), modelId, rate });
  return { walletId, key: { keyId, walletId }, secret, modelId };
}

/** A `ready` session with its reservation, through the same create the control plane uses; `policy` overrides TEST_POLICY. */
export async function createTestSession(
  db: DbHandle,
  owner: Pick<Owner, 'key' | 'modelId'>,
  policy: Partial<SessionPolicy> = {},
): Promise<SessionRecord> {
  const { session } = await createSession({
    ctx: { db },
    input: {
      key: owner.key,
      request: { model: owner.modelId, mode: 'speech_to_speech' },
      traceId: newTraceId(),
      policy: { ...TEST_POLICY, ...policy },
    },
  });
  return session;
}

/** What the relay does on attach and first input: an attachment row, activity, `active`. */
export async function attach(db: DbHandle, sessionId: string, relayId = 'relay-1'): Promise<string> {
  const id = newId('att');
  await db.pool.query(`INSERT INTO session_attachments (id, session_id, relay_id) VALUES ($1, $2, $3)`, [id, sessionId, relayId]);
  await db.pool.query(
    `UPDATE voice_sessions SET last_activity_at = now(), status = CASE WHEN status = 'ready' THEN 'active' ELSE status END,
            activated_at = coalesce(activated_at, now()) WHERE id = $1`,
    [sessionId],
  );
  return id;
}

/**
 * A version 4 checkpoint of `c` (counters left out are 0) from relay-1; `routes`: the split by route (its parts
 * sum to `c`), or null: unknown, as versions 1 and 2 read.
 */
export function checkpoint(
  sessionId: string,
  attachmentId: string,
  seq: number,
  c: Partial<Usage>,
  final = false,
  routes: CheckpointRoute[] | null = null,
): UsageCheckpoint {
  return {
    type: 'usage.checkpoint',
    version: 4,
    session_id: sessionId,
    attachment_id: attachmentId,
    relay_id: 'relay-1',
    seq,
    ...usageOf(c),
    routes: routes === null ? null : compactRoutes(routes),
    final,
    emitted_at: Date.now(),
  };
}
