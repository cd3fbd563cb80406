import type pg from 'pg';
import type { DbHandle } from './client.js';

/**
 * The one way application code talks to PostgreSQL: SQL text with `$n` parameters on node-postgres.
 * A pool and a checked-out connection both are one, so a function taking `Sql` runs inside or outside
 * a transaction alike. A `{ name, text }` query is prepared once per connection (the hot create path).
 */
export interface Sql {
  query<R extends pg.QueryResultRow = Record<string, unknown>>(
    text: string | pg.QueryConfig,
    values?: unknown[],
  ): Promise<pg.QueryResult<R>>;
}

/** What `withTransaction` needs of a domain function's ctx. */
export interface DbContext {
  db: DbHandle;
}

/**
 * Runs `fn` in one transaction on one pooled connection: COMMIT when it resolves, ROLLBACK when it throws
 * (the error is rethrown untouched, so `isRetryable` still sees the driver's code). No automatic retry.
 */
export async function withTransaction<T>(ctx: DbContext, fn: (tx: Sql) => Promise<T>): Promise<T> {
  const client = await ctx.db.pool.connect();
  let broken: Error | undefined;
  // A checked-out client whose connection dies between queries emits 'error'; unheard, it would crash
  // the process. Remember it instead: the pending query fails and the client is released as broken.
  const onError = (err: Error) => {
    broken = err;
  };
  client.on('error', onError);
  try {
    await client.query('BEGIN');
    const result = await fn(client);
    await client.query('COMMIT');
    return result;
  } catch (err) {
    // A failed ROLLBACK means the connection is unusable: release it as broken so the pool drops it.
    await client.query('ROLLBACK').catch((rollbackErr: Error) => {
      broken = rollbackErr;
    });
    throw err;
  } finally {
    client.off('error', onError);
    client.release(broken);
  }
}
