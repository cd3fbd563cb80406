// Issue 28, item 2: the gateway through PgBouncer in transaction mode. Debian's PgBouncer (1.18) has no
// protocol-level prepared statements, so named statements break through it and DATABASE_PREPARED_STATEMENTS
// =unnamed is what works; named statements are tested against PostgreSQL itself (and by the whole suite).
import { existsSync } from 'node:fs';
import t from 'tap';
import { createDb, type PreparedStatements } from '@s2s/db';
import { checkInvariants, faultFixture, notSettledOnce, PgBouncer, PGBOUNCER_BIN, Postgres, TempDir, turn } from '@s2s/chaos';

t.setTimeout(240_000);

const missing = !existsSync(PGBOUNCER_BIN);
if (missing && process.env.S2S_POOLER_TESTS === 'required') throw new Error(`S2S_POOLER_TESTS=required but ${PGBOUNCER_BIN} is missing`);
const skip = missing ? `no ${PGBOUNCER_BIN} (apt-get install pgbouncer; .ci/run installs it)` : false;

/** Many transactions repeating one named query on a pool larger than the pooler's server connections. */
async function namedWorkload(url: string, mode: PreparedStatements): Promise<string> {
  const db = createDb(url, { max: 8, preparedStatements: mode });
  try {
    await Promise.all(
      Array.from({ length: 32 }, async (_, i) => {
        const c = await db.pool.connect();
        try {
          await c.query('BEGIN');
          for (let k = 0; k < 3; k++) await c.query({ name: 'pooler_probe', text: 'SELECT $1::int + 1 AS x', values: [i] });
          await c.query('COMMIT');
        } finally {
          c.release();
        }
      }),
    );
    return 'ok';
  } catch (err) {
    return (err as Error).message;
  } finally {
    await db.close();
  }
}

t.test('named statements need a pooler that carries them; unnamed ones work through PgBouncer 1.18', { skip }, async (t) => {
  const dir = new TempDir('pooler');
  const pgsql = await Postgres.create(dir);
  const bouncer = await PgBouncer.create(dir, pgsql.port, { poolSize: 2 });
  t.teardown(async () => {
    await bouncer.stop();
    await pgsql.stop('fast');
    dir.remove();
  });
  t.equal(await namedWorkload(pgsql.url('postgres'), 'named'), 'ok', 'named, straight to PostgreSQL');
  t.equal(await namedWorkload(bouncer.url('postgres'), 'unnamed'), 'ok', 'unnamed, through PgBouncer in transaction mode');
  t.match(
    await namedWorkload(bouncer.url('postgres'), 'named'),
    /prepared statement "pooler_probe" (already exists|does not exist)/,
    'named through PgBouncer 1.18 fails: why the setting exists',
  );
});

t.test('the whole gateway through PgBouncer (unnamed): sessions talk, end and settle exactly once', { skip }, async (t) => {
  const { stack, api, tally, sessions } = await faultFixture(t, 3, { relays: 1, pooler: true });
  t.ok((await Promise.all(sessions.map(turn))).every(Boolean), 'a turn answered');
  for (const s of sessions) {
    const final = await s.endAndSettle(api, 60_000);
    t.ok(final, `${s.label} settled`);
    if (!final) continue;
    t.equal(final.status, 'completed', `${s.label} completed`);
    t.equal(final.usage.audio_in_ms, s.sentInMs, `${s.label}: billed input = sent`);
    t.equal(final.usage.audio_out_ms, Math.round(s.receivedOutMs), `${s.label}: billed output = received`);
  }
  t.same(await notSettledOnce(stack, sessions), [], 'each session settled exactly once');
  t.same(await checkInvariants(stack), [], 'ledger invariants hold');
  t.equal(
    tally.count((s) => s === 500),
    0,
    'no 500',
  );
  t.same(stack.crashes, [], 'no process crashed');
});
