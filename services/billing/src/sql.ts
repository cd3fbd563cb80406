import type { DbHandle } from '@s2s/db';

/** The slice of a pg client (pool or checked-out connection) billing uses for its raw SQL. */
export interface Sql {
  query<R extends object = Record<string, unknown>>(text: string, values?: unknown[]): Promise<{ rows: R[]; rowCount: number | null }>;
}

/** Runs `fn` in one transaction on one pooled connection; rolls back on any error. */
export async function withTransaction<T>(ctx: { db: DbHandle }, fn: (sql: Sql) => Promise<T>): Promise<T> {
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
