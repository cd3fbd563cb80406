import { z } from 'zod';

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

/** "true"/"1" or "false"/"0" (z.coerce.boolean() would read "false" as true). */
const flag = z
  .enum(['true', 'false', '1', '0'])
  .default('false')
  .transform((v) => v === 'true' || v === '1');

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
  // Maximum length of one connection in ms (0: none). At the cap: `error` session_expired, then close 1001,
  // as OpenAI ends a session at its 60-minute cap.
  LOCAL_PROVIDER_MAX_CONNECTION_MS: z.coerce.number().int().min(0).default(0),
  // Announce the cap this many ms ahead with an `error` event session_expiring (Gemini's goAway); 0: no warning.
  LOCAL_PROVIDER_CAP_WARNING_MS: z.coerce.number().int().min(0).default(0),
  // Refuse every new connection with 503 before the upgrade (plays a provider outage).
  LOCAL_PROVIDER_REFUSE_CONNECTIONS: flag,
  // pino level.
  LOG_LEVEL: z.enum(LOG_LEVELS).default('info'),
});
export type Config = z.infer<typeof ConfigSchema>;

/** The simulator options the configuration asks for (0 means "none"). */
export function providerOptions(config: Config) {
  return {
    port: config.LOCAL_PROVIDER_PORT,
    host: config.LOCAL_PROVIDER_HOST,
    apiKey: config.LOCAL_PROVIDER_API_KEY,
    replyChunkIntervalMs: config.LOCAL_PROVIDER_REPLY_INTERVAL_MS,
    maxConnectionMs: config.LOCAL_PROVIDER_MAX_CONNECTION_MS || null,
    capWarningMs: config.LOCAL_PROVIDER_CAP_WARNING_MS || null,
    refuseConnections: config.LOCAL_PROVIDER_REFUSE_CONNECTIONS,
  };
}

/** Parses the environment, or throws one readable error naming every bad variable. */
export function loadConfig(env: Record<string, string | undefined>): Config {
  const result = ConfigSchema.safeParse(env);
  if (!result.success) {
    const lines = result.error.issues.map((i) => `${i.path.join('.') || '(env)'}: ${i.message}`);
    throw new Error(`invalid configuration:\n  ${lines.join('\n  ')}`);
  }
  return result.data;
}
