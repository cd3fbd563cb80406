import { z } from 'zod';

// Services build their config schemas with the same zod instance as these helpers (they do not depend on zod).
export { z };

/** "true"/"1"/"yes" and "false"/"0"/"no": z.coerce.boolean() would read "false" as true. */
export const envBoolean = (defaultValue: boolean) =>
  z
    .enum(['true', 'false', '1', '0', 'yes', 'no', ''])
    .optional()
    .transform((v) => (v === undefined || v === '' ? defaultValue : v === 'true' || v === '1' || v === 'yes'));

export const envInt = (defaultValue: number, opts: { min?: number; max?: number } = {}) =>
  z.coerce
    .number()
    .int()
    .min(opts.min ?? Number.MIN_SAFE_INTEGER)
    .max(opts.max ?? Number.MAX_SAFE_INTEGER)
    .default(defaultValue);

export const envPort = (defaultValue: number) => envInt(defaultValue, { min: 0, max: 65535 });

/** The origin of a browser page as its `Origin` header spells it (`scheme://host[:port]`, normalized), or null. */
function asOrigin(value: string): string | null {
  try {
    const url = new URL(value);
    const bare = url.pathname === '/' && url.search === '' && url.hash === '' && url.username === '' && url.password === '';
    return bare && url.origin !== 'null' ? url.origin : null;
  } catch {
    return null;
  }
}

/**
 * A comma-separated list of browser origins (`https://app.example.com,http://localhost:5173`) or `*` for any.
 * Unset or empty: undefined (each service says what that means).
 */
export const envOriginList = () =>
  z
    .string()
    .optional()
    .transform((v, ctx) => {
      const items = (v ?? '')
        .split(',')
        .map((s) => s.trim())
        .filter((s) => s !== '');
      if (items.length === 0) return undefined;
      if (items.includes('*')) return '*' as const;
      const origins: string[] = [];
      for (const item of items) {
        const origin = asOrigin(item);
        if (origin === null) ctx.addIssue({ code: 'custom', message: `${item} is not an origin (scheme://host[:port]) or *` });
        else origins.push(origin);
      }
      return origins;
    });

export const DEFAULT_DATABASE_URL = 'postgres://postgres@127.0.0.1:5432/s2s_gateway';
export const DEFAULT_NATS_URL = 'nats://127.0.0.1:4222';

/** Variables every service shares. */
export const CommonEnv = z.object({
  NODE_ENV: z.enum(['development', 'production', 'test']).default('development'),
  // PostgreSQL connection string.
  DATABASE_URL: z.string().url().default(DEFAULT_DATABASE_URL),
  // NATS server with JetStream; a cluster's servers comma-separated (nats://a:4222,nats://b:4222).
  NATS_URL: z.string().default(DEFAULT_NATS_URL),
  // Prefix of every subject and of the stream name; tests use a unique one.
  BUS_PREFIX: z
    .string()
    .regex(/^[a-zA-Z0-9_-]+$/)
    .default('s2s'),
  // Replicas of the JetStream stream when a service creates it (3 on a three-node NATS cluster). A service
  // raises an existing stream's replicas to this but never lowers what an operator set (docs/operations.md).
  BUS_STREAM_REPLICAS: envInt(1, { min: 1, max: 5 }),
  // How the gateway's own SQL is prepared: `named` (protocol-level prepared statements, parsed once per
  // connection) or `unnamed` (parsed at every execution), for a transaction-mode pooler without prepared
  // statement support, e.g. PgBouncer before 1.21 (docs/operations.md, "PgBouncer").
  DATABASE_PREPARED_STATEMENTS: z.enum(['named', 'unnamed']).default('named'),
  // pino level.
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
});
export type CommonEnv = z.infer<typeof CommonEnv>;

/** Parses `env` with `schema`, or throws one readable error naming every bad variable. */
export function parseEnv<S extends z.ZodType>(schema: S, env: Record<string, string | undefined>): z.infer<S> {
  const result = schema.safeParse(env);
  if (!result.success) {
    const lines = result.error.issues.map((i) => `${i.path.join('.') || '(env)'}: ${i.message}`);
    throw new Error(`invalid configuration:\n  ${lines.join('\n  ')}`);
  }
  return result.data;
}

/**
 * The session variables of every service that creates sessions (the control plane; the relay's legacy
 * `/v1/realtime?model=` alias), named once here: the settings a new session snapshots and the limits of a key
 * without its own (decisions.md, "Time, status and expiry", "Money", "Limits").
 */
export const SessionEnv = {
  // Idle time after which a session expires; stored per session at creation.
  SESSION_IDLE_TIMEOUT_SECONDS: envInt(300, { min: 1, max: 86_400 }),
  // Maximum length of a session; stored per session as max_ends_at.
  SESSION_MAX_SECONDS: envInt(3600, { min: 1, max: 7 * 86_400 }),
  // Minutes of audio the preauthorization covers.
  SESSION_PREAUTH_MINUTES: envInt(10, { min: 1, max: 24 * 60 }),
  // Non-terminal sessions a key may hold.
  KEY_MAX_LIVE_SESSIONS: envInt(1000, { min: 1, max: 2_147_483_647 }),
  // Sessions a key may create per minute (a burst of this many, then refilled evenly).
  KEY_MAX_CREATES_PER_MINUTE: envInt(6000, { min: 1, max: 2_147_483_647 }),
};

type SessionVariables = { [K in keyof typeof SessionEnv]: number };

/**
 * The deployment's session policy, which a new session snapshots (`SessionPolicy` of `createSession`), from
 * SessionEnv's variables; the control plane's SESSION_CREATE_SYNC_COMMIT too where the config has it.
 */
export function sessionPolicyOf(e: SessionVariables & { SESSION_CREATE_SYNC_COMMIT?: boolean }) {
  return {
    idleTimeoutSeconds: e.SESSION_IDLE_TIMEOUT_SECONDS,
    maxSeconds: e.SESSION_MAX_SECONDS,
    preauthMinutes: e.SESSION_PREAUTH_MINUTES,
    keyLimits: { maxLiveSessions: e.KEY_MAX_LIVE_SESSIONS, maxCreatesPerMinute: e.KEY_MAX_CREATES_PER_MINUTE },
    ...(e.SESSION_CREATE_SYNC_COMMIT === undefined ? {} : { syncCommit: e.SESSION_CREATE_SYNC_COMMIT }),
  };
}
