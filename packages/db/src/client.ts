import pg from 'pg';
import { once } from './once.js';

export interface CreateDbOptions {
  /** Pool size; raw `pool.query` and Prisma (`@s2s/db/prisma`, where a process uses it) share these connections. */
  max?: number;
  /** Server-side `statement_timeout` of every connection; unset means none. */
  statementTimeoutMs?: number;
  /** How long a checkout waits for a free or new connection before failing. */
  connectionTimeoutMs?: number;
  /** Errors of idle pooled connections (e.g. the server restarted); the pool replaces them. */
  onPoolError?: (err: Error) => void;
  /**
   * `named` (default): a `{ name, text }` query is a protocol-level prepared statement, parsed once per
   * connection. `unnamed`: every query goes as an unnamed statement (parsed at each execution), for a
   * transaction-mode pooler that does not carry prepared statements across server connections
   * (DATABASE_PREPARED_STATEMENTS; docs/operations.md, "PgBouncer").
   */
  preparedStatements?: PreparedStatements;
}

export type PreparedStatements = 'named' | 'unnamed';

/**
 * The database of a process: one `pg` pool. Prisma Client is not built here: a process that uses it gets it
 * from `prismaOf(db)` (`@s2s/db/prisma`), over this same pool, so one that never does never loads it.
 */
export interface DbHandle {
  pool: pg.Pool;
  /** Ends the pool (and so whatever Prisma client runs over it); safe to call more than once. */
  close(): Promise<void>;
}

const DEFAULT_MAX = 10;
const INT8_OID = 20;

/**
 * bigint columns (amounts, usage) arrive as numbers: every amount the gateway stores is held at most
 * 2^53 - 1 (docs/architecture.md "Amounts"), so this is exact; anything larger stays a BigInt, which fails
 * loudly in arithmetic and JSON instead of rounding silently.
 */
export function parseInt8(text: string): number | bigint {
  const n = Number(text);
  return Number.isSafeInteger(n) ? n : BigInt(text);
}

const int8AsNumber: pg.CustomTypesConfig = {
  getTypeParser: ((oid: number, format?: string) =>
    oid === INT8_OID && format !== 'binary'
      ? parseInt8
      : pg.types.getTypeParser(oid, format as 'text')) as pg.CustomTypesConfig['getTypeParser'],
};
// A bounded wait turns a saturated pool or an unreachable server into an error
// (retryable, 503) instead of a request that hangs forever.
const DEFAULT_CONNECTION_TIMEOUT_MS = 5_000;

/**
 * A connection that sends every query as an unnamed statement: the name of a `{ name, text }` query is
 * dropped, so nothing is prepared on one server connection and executed on another behind a pooler.
 */
class UnnamedStatementClient extends pg.Client {
  override query(...args: unknown[]): never {
    const [config, ...rest] = args;
    const unnamed = isNamedConfig(config) ? { ...config, name: undefined } : config;
    return (super.query as (...a: unknown[]) => never)(unnamed, ...rest);
  }
}

function isNamedConfig(config: unknown): config is pg.QueryConfig {
  // A submittable (pg.Query, a cursor) carries its own protocol state: left as it is.
  return typeof config === 'object' && config !== null && typeof (config as { name?: unknown }).name === 'string' && !('submit' in config);
}

export function createDb(databaseUrl: string, opts: CreateDbOptions = {}): DbHandle {
  const pool = new pg.Pool({
    ...(opts.preparedStatements === 'unnamed' ? { Client: UnnamedStatementClient } : {}),
    connectionString: databaseUrl,
    max: opts.max ?? DEFAULT_MAX,
    connectionTimeoutMillis: opts.connectionTimeoutMs ?? DEFAULT_CONNECTION_TIMEOUT_MS,
    types: int8AsNumber,
    ...(opts.statementTimeoutMs === undefined ? {} : { statement_timeout: opts.statementTimeoutMs }),
  });
  // pg-pool emits 'error' for idle connections that die; without a listener that
  // event would crash the process, and PrismaPg only listens while Prisma is connected.
  pool.on('error', opts.onPoolError ?? (() => {}));
  return { pool, close: once(() => pool.end()) };
}
