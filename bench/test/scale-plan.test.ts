// The scale run's core plan and its schema step (the pack applies @s2s/db's migrations without dbmate).
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import t from 'tap';
import { migrate } from '@s2s/db';
import { adminDatabaseUrl } from '@s2s/db/testing';
import { planCores } from '../scale/cluster.js';
import { applyMigrations } from '../scale/schema.js';

t.test('16 cores: the layout of issue 28, every role on cores of its own', async (t) => {
  const p = planCores(16);
  t.same(
    { postgres: p.postgres, nats: p.nats, planes: p.planes, relay: p.relay, load: p.load, shared: p.shared },
    { postgres: '0,1,2,3,4,5', nats: '6', planes: ['7', '8', '9', '10'], relay: '11', load: '12,13,14,15', shared: false },
  );
  t.same(planCores(16, 2).load, '10,11,12,13,14,15', 'fewer planes leave more cores to the load');
  const small = planCores(2);
  t.ok(small.shared, 'two cores: roles share them, and the plan says so');
  t.ok([small.postgres, small.nats, ...small.planes, small.relay, small.load].every((l) => /^[01](,[01])*$/.test(l)));
});

/** Tables, columns, constraints and indexes of a database, as text to compare. */
async function shape(url: string): Promise<string[]> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    const cols = await c.query<{ s: string }>(
      `SELECT table_name || '.' || column_name || ' ' || data_type || ' ' || is_nullable || ' ' || coalesce(column_default, '') AS s
         FROM information_schema.columns WHERE table_schema = 'public'`,
    );
    const cons = await c.query<{ s: string }>(
      `SELECT conrelid::regclass::text || ' ' || conname || ' ' || pg_get_constraintdef(oid) AS s FROM pg_constraint WHERE connamespace = 'public'::regnamespace`,
    );
    const idx = await c.query<{ s: string }>(`SELECT indexdef AS s FROM pg_indexes WHERE schemaname = 'public'`);
    const versions = await c.query<{ s: string }>('SELECT version AS s FROM schema_migrations');
    return [...cols.rows, ...cons.rows, ...idx.rows, ...versions.rows].map((r) => r.s).sort();
  } finally {
    await c.end();
  }
}

t.test('the schema step makes the schema dbmate makes', async (t) => {
  const admin = adminDatabaseUrl();
  const names = [`s2s_scale_dbmate_${randomBytes(4).toString('hex')}`, `s2s_scale_own_${randomBytes(4).toString('hex')}`];
  const c = new pg.Client({ connectionString: admin });
  await c.connect();
  t.teardown(async () => {
    for (const n of names) await c.query(`DROP DATABASE IF EXISTS ${n} WITH (FORCE)`);
    await c.end();
  });
  for (const n of names) await c.query(`CREATE DATABASE ${n}`);
  const [byDbmate, byUs] = names.map((n) => {
    const u = new URL(admin);
    u.pathname = `/${n}`;
    return u.toString();
  }) as [string, string];
  await migrate(byDbmate);
  await applyMigrations(byUs);
  await applyMigrations(byUs); // a second time: nothing pending, nothing done
  const expected = await shape(byDbmate);
  t.ok(expected.length > 50, `dbmate's schema has ${expected.length} entries`);
  t.same(await shape(byUs), expected);
});
