import { z } from 'zod';

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

export const ConfigSchema = z.object({
  // Port of the simulator's WebSocket endpoint (ws://<host>:<port>/v1/realtime); 0 picks a free one.
  LOCAL_PROVIDER_PORT: z.coerce.number().int().min(0).max(65535).default(8090),
  // Interface to bind; loopback by default, since the simulator is for development, tests and benchmarks.
  LOCAL_PROVIDER_HOST: z.string().min(1).default('127.0.0.1'),
  // When set, clients must send `Authorization: Bearer <key>` (as the relay's local adapter does).
  LOCAL_PROVIDER_API_KEY: z
    .string()
    .optional()
    .transform((v) => (v ? v : null)),
  // Pause between two reply deltas in milliseconds (0: back to back).
  LOCAL_PROVIDER_REPLY_INTERVAL_MS: z.coerce.number().int().min(0).max(10_000).default(10),
  // pino level.
  LOG_LEVEL: z.enum(LOG_LEVELS).default('info'),
});
export type Config = z.infer<typeof ConfigSchema>;

/** Parses the environment, or throws one readable error naming every bad variable. */
export function loadConfig(env: Record<string, string | undefined>): Config {
  const result = ConfigSchema.safeParse(env);
  if (!result.success) {
    const lines = result.error.issues.map((i) => `${i.path.join('.') || '(env)'}: ${i.message}`);
    throw new Error(`invalid configuration:\n  ${lines.join('\n  ')}`);
  }
  return result.data;
}
