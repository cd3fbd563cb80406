import { CommonEnv, SessionEnv, envBoolean, envInt, envOriginList, envPort, parseEnv, z } from '@s2s/core';

/** What `npm start` uses outside production when ADMIN_TOKEN is unset (decisions.md, Keys and operators). */
export const DEV_ADMIN_TOKEN = 'dev-admin-token';

const optionalSecret = z
  .string()
  .optional()
  .transform((v) => (v === undefined || v.trim() === '' ? undefined : v));

/** The control plane's configuration: its parsed output is the config, keyed by the variables' names. */
export const ControlPlaneConfig = CommonEnv.extend({
  // Interface to listen on: loopback on a developer machine, 0.0.0.0 in a container.
  HOST: z.string().min(1).default('127.0.0.1'),
  // Public HTTP API port; 0 picks a free one (tests, benchmarks).
  HTTP_PORT: envPort(8080),
  // Base of every session's `realtime.url` (the relay's public WebSocket address).
  REALTIME_PUBLIC_URL: z.url({ protocol: /^wss?$/, error: 'must be a ws:// or wss:// URL' }).default('ws://127.0.0.1:8081/v1/realtime'),
  // Bearer token of the operator API; required in production, DEV_ADMIN_TOKEN otherwise.
  ADMIN_TOKEN: optionalSecret,
  // SESSION_IDLE_TIMEOUT_SECONDS, SESSION_MAX_SECONDS, SESSION_PREAUTH_MINUTES, KEY_MAX_LIVE_SESSIONS,
  // KEY_MAX_CREATES_PER_MINUTE: the session variables the relay reads too (@s2s/core SessionEnv).
  ...SessionEnv,
  // How long `POST .../end` waits for settlement before answering 409.
  END_WAIT_MS: envInt(8000, { min: 0, max: 120_000 }),
  // Largest accepted JSON request body; larger ones get 400 invalid_request.
  HTTP_BODY_LIMIT_BYTES: envInt(65_536, { min: 64, max: 10 * 1024 * 1024 }),
  // Connections in the PostgreSQL pool. Creates on one wallet queue on its row anyway; more
  // connections mostly add PostgreSQL backends competing for the same cores.
  DB_POOL_SIZE: envInt(8, { min: 1, max: 200 }),
  // Server-side statement timeout of every pooled connection; 0 disables it.
  DB_STATEMENT_TIMEOUT_MS: envInt(10_000, { min: 0, max: 600_000 }),
  // How long in-flight requests may take to finish after SIGTERM before their sockets are closed.
  SHUTDOWN_GRACE_MS: envInt(10_000, { min: 0, max: 120_000 }),
  // Wait for the WAL flush before answering a create. Off by default: the wallet row stays locked until
  // commit, and a crash can only lose unused `ready` sessions together with their reservation.
  SESSION_CREATE_SYNC_COMMIT: envBoolean(false),
  // Period of the catalog cache's reload from the store: how stale GET /v1/models can be on a control plane
  // that missed a catalog.changed bus message (docs/architecture.md, "The catalog cache").
  CATALOG_REFRESH_MS: envInt(5000, { min: 100, max: 300_000 }),
  // Insert the default catalog (local/echo-1, local/unapproved-1) when it is missing.
  SEED_CATALOG: envBoolean(true),
  // Browser origins the public API answers CORS for (comma-separated, or *); none when unset (decisions.md).
  CORS_ALLOWED_ORIGINS: envOriginList(),
})
  .superRefine((env, ctx) => {
    if (env.NODE_ENV !== 'production') return;
    if (env.ADMIN_TOKEN === undefined) {
      ctx.addIssue({ code: 'custom', path: ['ADMIN_TOKEN'], message: 'is required when NODE_ENV is production' });
    } else if (env.ADMIN_TOKEN === DEV_ADMIN_TOKEN) {
      ctx.addIssue({ code: 'custom', path: ['ADMIN_TOKEN'], message: 'must not be the development default in production' });
    }
  })
  .transform((env) => ({
    ...env,
    ADMIN_TOKEN: env.ADMIN_TOKEN ?? DEV_ADMIN_TOKEN,
    /** True when ADMIN_TOKEN was unset and the development default is in use. */
    adminTokenIsDevDefault: env.ADMIN_TOKEN === undefined,
  }));
export type Config = z.infer<typeof ControlPlaneConfig>;

/** Parses the control plane's environment; throws one error naming every bad variable. */
export function loadConfig(env: Record<string, string | undefined>): Config {
  return parseEnv(ControlPlaneConfig, env);
}
