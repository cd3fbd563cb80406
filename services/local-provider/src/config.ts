import { CommonEnv, envBoolean, envInt, envPort, parseEnv, z } from '@s2s/core';
import { DEFAULT_REPLY_CHUNK_INTERVAL_MS, type LocalProviderOptions } from '@s2s/local-provider';

/** The simulator's environment; its parsed output is the service's config. */
export const LocalProviderConfig = z
  .object({
    // Port of the simulator's WebSocket endpoint (ws://<host>:<port>/v1/realtime); 0 picks a free one.
    LOCAL_PROVIDER_PORT: envPort(8090),
    // Interface to bind; loopback by default, since the simulator is for development, tests and benchmarks.
    LOCAL_PROVIDER_HOST: z.string().min(1).default('127.0.0.1'),
    // When set (not empty), clients must send `Authorization: Bearer <key>` (as the relay's local adapter does).
    LOCAL_PROVIDER_API_KEY: z.string().optional(),
    // `azure`: answer as Azure OpenAI's GA endpoint (/openai/v1/realtime, the key in an `api-key` header),
    // e.g. as a failover route of a model; `openai` (default): /v1/realtime with a bearer key.
    LOCAL_PROVIDER_DIALECT: z.enum(['openai', 'azure']).default('openai'),
    // Pause between two reply deltas in milliseconds (0: back to back).
    LOCAL_PROVIDER_REPLY_INTERVAL_MS: envInt(DEFAULT_REPLY_CHUNK_INTERVAL_MS, { min: 0, max: 10_000 }),
    // Maximum length of one connection in ms (0: none). At the cap: `error` session_expired, then close 1001,
    // as OpenAI ends a session at its 60-minute cap.
    LOCAL_PROVIDER_MAX_CONNECTION_MS: envInt(0, { min: 0 }),
    // Announce the cap this many ms ahead with an `error` event session_expiring (Gemini's goAway); 0: no warning.
    LOCAL_PROVIDER_CAP_WARNING_MS: envInt(0, { min: 0 }),
    // Refuse every new connection with 503 before the upgrade (plays a provider outage).
    LOCAL_PROVIDER_REFUSE_CONNECTIONS: envBoolean(false),
    // pino level (the one every service reads).
    LOG_LEVEL: CommonEnv.shape.LOG_LEVEL,
  })
  .transform((e) => ({
    logLevel: e.LOG_LEVEL,
    /** The simulator's options (0 means "none"). */
    provider: {
      port: e.LOCAL_PROVIDER_PORT,
      host: e.LOCAL_PROVIDER_HOST,
      apiKey: e.LOCAL_PROVIDER_API_KEY || null,
      ...(e.LOCAL_PROVIDER_DIALECT === 'azure' ? { path: '/openai/v1/realtime', apiKeyHeader: 'api-key' as const } : {}),
      replyChunkIntervalMs: e.LOCAL_PROVIDER_REPLY_INTERVAL_MS,
      maxConnectionMs: e.LOCAL_PROVIDER_MAX_CONNECTION_MS || null,
      capWarningMs: e.LOCAL_PROVIDER_CAP_WARNING_MS || null,
      refuseConnections: e.LOCAL_PROVIDER_REFUSE_CONNECTIONS,
    } satisfies LocalProviderOptions,
  }));

export type Config = z.output<typeof LocalProviderConfig>;

/** Parses the simulator's environment; throws one error naming every bad variable. */
export function loadConfig(env: Record<string, string | undefined>): Config {
  return parseEnv(LocalProviderConfig, env);
}
