import { z } from 'zod';
import { ModelId } from './http.js';

/**
 * `POST /console/api/playground/client_secrets` (admin token): the console's backend mints an `ek_` secret for
 * the playground with the key the operator picked; the key's secret never reaches the page.
 */
export const PlaygroundSecretRequest = z.strictObject({
  key_id: z.string().min(1).max(64),
  model: ModelId,
  instructions: z
    .string()
    .max(64 * 1024)
    .optional(),
  voice: z.string().min(1).max(64).optional(),
});
export type PlaygroundSecretRequest = z.infer<typeof PlaygroundSecretRequest>;

export const PlaygroundSecret = z.strictObject({
  /** The `ek_` secret: attaches `session_id` only, until `expires_at` (unix seconds). */
  value: z.string(),
  expires_at: z.int(),
  session_id: z.string(),
  model: ModelId,
  /** Where the page opens its WebSocket (`svc-realtime-v1`, the secret in a subprotocol). */
  realtime_url: z.string(),
});
export type PlaygroundSecret = z.infer<typeof PlaygroundSecret>;
