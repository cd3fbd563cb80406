// Real failures from PostgreSQL, pg and Prisma 7, classified through whatever wraps them.
import pg from 'pg';
import t from 'tap';
import { prismaOf } from '../src/prisma.js';
import { createDb, isRetryableDbError, isStoreUnavailableError, type DbHandle } from '../src/index.js';
import { createTestDatabase } from '../src/testing.js';
import { seedWallet } from './fixtures/seed.js';

const CLOSED_PORT_URL = 'postgres://postgres@127.0.0.1:1/s2s_nowhere';

async function rejectionOf(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (err) {
    return err;
  }
  throw new Error('expected a rejection');
}

function classify(err: unknown): { retryable: boolean; unavailable: boolean } {
  return { retryable: isRetryableDbError(err), unavailable: isStoreUnavailableError(err) };
}

const DOWN = { retryable: true, unavailable: true };
const CONFLICT = { retryable: true, unavailable: false };
const PERMANENT = { retryable: false, unavailable: false };

/** Both transactions read the wallet, then both write it: one loses with a serialization failure. */
async function serializationFailure(db: DbHandle, write: 'model' | 'raw'): Promise<unknown> {
  let arrived = 0;
  let bothRead!: () => void;
  const barrier = new Promise<void>((resolve) => (bothRead = resolve));
  const attempt = () =>
    prismaOf(db).$transaction(
      async (tx) => {
        const wallet = await tx.wallet.findUniqueOrThrow({ where: { id: 'wal_race' } });
        if (++arrived === 2) bothRead();
        await barrier;
        if (write === 'model') await tx.wallet.update({ where: { id: 'wal_race' }, data: { balanceCents: wallet.balanceCents + 1n } });
        else await tx.$executeRaw`UPDATE wallets SET balance_cents = balance_cents + 1 WHERE id = 'wal_race'`;
      },
      { isolationLevel: 'Serializable' },
    );
  const results = await Promise.allSettled([attempt(), attempt()]);
  const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (!failed) throw new Error('no serialization failure happened');
  return failed.reason;
}

t.test('connection refused, from pg and from every Prisma entry point', async (t) => {
  const db = createDb(CLOSED_PORT_URL, { connectionTimeoutMs: 1_000 });
  t.teardown(db.close);
  const fromPool = await rejectionOf(db.pool.query('SELECT 1'));
  t.equal((fromPool as { code?: string }).code, 'ECONNREFUSED');
  t.same(classify(fromPool), DOWN, 'pg');
  const fromModel = await rejectionOf(prismaOf(db).wallet.findMany());
  t.equal((fromModel as { code?: string }).code, 'P1001');
  t.same(classify(fromModel), DOWN, 'Prisma model query (P1001)');
  const fromRaw = await rejectionOf(prismaOf(db).$queryRaw`SELECT 1`);
  t.equal((fromRaw as { code?: string }).code, 'P2010', 'raw queries wrap every failure in P2010');
  t.same(classify(fromRaw), DOWN, 'Prisma raw query');
  t.same(classify(await rejectionOf(prismaOf(db).$transaction(async (tx) => tx.wallet.count()))), DOWN, 'Prisma transaction start');
});

t.test('serialization failures are retryable but not an outage', async (t) => {
  const { db } = await createTestDatabase(t);
  await prismaOf(db).wallet.create({ data: { id: 'wal_race', balanceCents: 100n } });
  const fromModel = await serializationFailure(db, 'model');
  t.equal((fromModel as { code?: string }).code, 'P2034');
  t.same(classify(fromModel), CONFLICT, 'Prisma model write (P2034)');
  const fromRaw = await serializationFailure(db, 'raw');
  t.equal((fromRaw as { code?: string }).code, 'P2010');
  t.same(classify(fromRaw), CONFLICT, 'Prisma raw write (P2010 around 40001)');
});

t.test('a deadlock is retryable', async (t) => {
  const { db } = await createTestDatabase(t);
  await db.pool.query(`INSERT INTO wallets (id, balance_cents) VALUES ('wal_1', 1), ('wal_2', 1)`);
  const [a, b] = await Promise.all([db.pool.connect(), db.pool.connect()]);
  t.teardown(() => {
    a.release();
    b.release();
  });
  const touch = (c: pg.PoolClient, id: string) => c.query('UPDATE wallets SET balance_cents = balance_cents WHERE id = $1', [id]);
  await Promise.all([a.query('BEGIN'), b.query('BEGIN')]);
  await touch(a, 'wal_1');
  await touch(b, 'wal_2');
  const results = await Promise.allSettled([touch(a, 'wal_2'), touch(b, 'wal_1')]);
  await Promise.all([a.query('ROLLBACK'), b.query('ROLLBACK')]);
  const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  t.equal((failed?.reason as { code?: string }).code, '40P01');
  t.same(classify(failed?.reason), CONFLICT);
});

t.test('an exhausted pool is an outage (Prisma passes the pg-pool error through)', async (t) => {
  const { url } = await createTestDatabase(t);
  const db = createDb(url, { max: 1, connectionTimeoutMs: 200 });
  t.teardown(db.close);
  const held = await db.pool.connect();
  const err = await rejectionOf(prismaOf(db).wallet.count());
  held.release();
  t.match(err, { message: /timeout exceeded when trying to connect/ });
  t.same(classify(err), DOWN);
});

t.test('a connection terminated by the server (57P01) is an outage', async (t) => {
  const { url, db: admin } = await createTestDatabase(t);
  const db = createDb(url);
  t.teardown(db.close);
  const sleeping = rejectionOf(prismaOf(db).$queryRaw`SELECT pg_sleep(30)`);
  // Poll until the query is visible in pg_stat_activity, then terminate its backend.
  for (let killed = 0, tries = 0; killed === 0; tries++) {
    if (tries > 250) throw new Error('the sleeping query never showed up');
    await new Promise((resolve) => setTimeout(resolve, 20));
    const { rowCount } = await admin.pool.query(
      "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query LIKE 'SELECT pg_sleep(30)%' AND pid <> pg_backend_pid()",
    );
    killed = rowCount ?? 0;
  }
  const err = await sleeping;
  t.match(err, { code: 'P2010', message: /57P01/ });
  t.same(classify(err), DOWN);
});

t.test('constraint violations and bugs are neither', async (t) => {
  const { db } = await createTestDatabase(t);
  await seedWallet(prismaOf(db), 'wal_dup', 1n);
  const unique = await rejectionOf(prismaOf(db).wallet.create({ data: { id: 'wal_dup', balanceCents: 1n } }));
  t.equal((unique as { code?: string }).code, 'P2002');
  t.same(classify(unique), PERMANENT, 'unique violation (P2002)');
  t.same(classify(await rejectionOf(db.pool.query(`UPDATE wallets SET balance_cents = -1`))), PERMANENT, 'check violation (pg)');
  t.same(classify(await rejectionOf(prismaOf(db).$executeRaw`UPDATE wallets SET balance_cents = -1`)), PERMANENT, 'check violation (raw)');
  t.same(classify(await rejectionOf(db.pool.query('SELEC 1'))), PERMANENT, 'syntax error');
  for (const err of [new Error('boom'), undefined, null, 'ECONNREFUSED', { code: 42 }]) t.same(classify(err), PERMANENT);
});

// Shapes that are hard to provoke on a shared server: checked by construction.
t.test('wrapped and aggregated causes are followed', async (t) => {
  t.same(classify(new Error('outer', { cause: Object.assign(new Error('too many'), { code: '53300' }) })), DOWN);
  t.same(classify(new AggregateError([Object.assign(new Error('refused'), { code: 'ECONNREFUSED' })])), DOWN);
  t.same(classify({ code: 'P2039', meta: { driverAdapterError: { cause: { kind: 'postgres', originalCode: '57P03' } } } }), DOWN);
  t.same(classify({ code: 'P2039', meta: { driverAdapterError: { cause: { kind: 'postgres', originalCode: '08006' } } } }), DOWN);
  t.same(classify(Object.assign(new Error('deadlock detected'), { code: '40P01' })), CONFLICT);
  const loop: { cause?: unknown } = {};
  loop.cause = loop;
  t.same(classify(loop), PERMANENT, 'a cause cycle ends');
});
