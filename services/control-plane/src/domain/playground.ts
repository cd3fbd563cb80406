import type { PlaygroundSecret, PlaygroundSecretRequest } from '@s2s/contract';
import { errors, isPossibleId } from '@s2s/core';
import { sqlStatement } from '@s2s/db';
import { z } from 'zod';
import type { AppContext } from '../context.js';
import { createRealtimeClientSecret } from './client-secrets.js';

const KEY_SECRET_HASH = sqlStatement(import.meta.url, {
  text: 'SELECT secret_hash FROM api_keys WHERE id = $1',
  row: z.object({ secret_hash: z.string() }),
});

/**
 * The console's playground backend: a realtime client secret minted with the key the operator picked, exactly as
 * `POST /v1/realtime/client_secrets` would with that key (same limits, preauthorization and errors). The server
 * holds the key's hash, so no API key ever travels to the page; input transcription is on for live transcripts.
 */
export async function mintPlaygroundSecret({
  ctx,
  input,
}: {
  ctx: AppContext;
  input: { request: PlaygroundSecretRequest; traceId: string };
}): Promise<PlaygroundSecret> {
  const { key_id: keyId, model, instructions, voice } = input.request;
  if (!isPossibleId(keyId)) throw errors.keyNotFound();
  const { rows } = await KEY_SECRET_HASH.run(ctx.db.pool, [keyId]);
  const key = rows[0];
  if (!key) throw errors.keyNotFound();
  const minted = await createRealtimeClientSecret({
    ctx,
    input: {
      keySecretHash: key.secret_hash,
      traceId: input.traceId,
      request: {
        session: {
          type: 'realtime',
          model,
          ...(instructions !== undefined && instructions !== '' ? { instructions } : {}),
          audio: { input: { transcription: {} }, ...(voice !== undefined ? { output: { voice } } : {}) },
        },
      },
    },
  });
  return {
    value: minted.value,
    expires_at: minted.expires_at,
    session_id: minted.session.id,
    model: minted.session.model,
    realtime_url: ctx.config.REALTIME_PUBLIC_URL,
  };
}
