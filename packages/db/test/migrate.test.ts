import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import pg from 'pg';
import t from 'tap';
import { prismaOf } from '../src/prisma.js';
import { ensureDatabase, migrate, MIGRATIONS_DIR, withClient, withDatabase } from '../src/migrate.js';
import { adminDatabaseUrl, createTestDatabase, type TeardownHost } from '../src/testing.js';
import { MODEL_ID, RATE_ID, seedCatalog } from './fixtures/seed.js';

const execFileAsync = promisify(execFile);
const PACKAGE_DIR = fileURLToPath(new URL('..', import.meta.url));
const MIGRATION_VERSIONS = readdirSync(MIGRATIONS_DIR)
  .filter((f) => f.endsWith('.sql'))
  .map((f) => f.split('_')[0])
  .sort();

/** A database name nobody has, dropped at the end of the test. */
function scratchDatabase(t: TeardownHost): string {
  const name = `s2s_migrate_${randomBytes(6).toString('hex')}`;
  t.teardown(() => withClient(adminDatabaseUrl(), (c) => c.query(`DROP DATABASE IF EXISTS ${pg.escapeIdentifier(name)} WITH (FORCE)`)));
  return withDatabase(adminDatabaseUrl(), name);
}

async function appliedVersions(url: string): Promise<string[]> {
  const { rows } = await withClient(url, (c) => c.query<{ version: string }>('SELECT version FROM schema_migrations ORDER BY version'));
  return rows.map((r) => r.version);
}

t.test('ensureDatabase and migrate build a current database and can run again', async (t) => {
  const url = scratchDatabase(t);
  await ensureDatabase(url);
  await ensureDatabase(url);
  await migrate(url);
  t.same(await appliedVersions(url), MIGRATION_VERSIONS);
  await migrate(url);
  t.same(await appliedVersions(url), MIGRATION_VERSIONS, 'a second run applies nothing');
});

t.test('the migrate CLI creates and migrates the database it is given', async (t) => {
  const url = scratchDatabase(t);
  const { stderr } = await execFileAsync(process.execPath, ['--import', 'tsx', 'src/migrate-cli.ts', url], { cwd: PACKAGE_DIR });
  t.match(stderr, /is up to date/);
  t.same(await appliedVersions(url), MIGRATION_VERSIONS);
});

t.test('migrate reports dbmate failures without the URL', async (t) => {
  const url = 'postgres://postgres:secret-pw@127.0.0.1:1/s2s_nowhere';
  await t.rejects(migrate(url), /dbmate up failed/);
  await migrate(url).catch((err: Error) => t.notMatch(err.message, /secret-pw/));
});

t.test('rate snapshots refuse UPDATE and DELETE', async (t) => {
  const { db } = await createTestDatabase(t);
  await seedCatalog(prismaOf(db));
  await t.rejects(db.pool.query('UPDATE rate_snapshots SET per_minute = 7 WHERE id = $1', [RATE_ID]), /immutable/);
  await t.rejects(prismaOf(db).rateSnapshot.update({ where: { id: RATE_ID }, data: { perMinute: 7 } }), /immutable/);
  await t.rejects(db.pool.query('DELETE FROM rate_snapshots WHERE id = $1', [RATE_ID]), /immutable/);
  const rate = await prismaOf(db).rateSnapshot.findUniqueOrThrow({ where: { id: RATE_ID } });
  t.equal(rate.perMinute, 6n, 'the row is unchanged');
  t.equal(rate.modelId, MODEL_ID);
});

// voice_sessions names its model and rate snapshot without foreign keys (a create locks no catalog row); what
// keeps the references sound instead: a model's current rate is its own, and a model with a rate stays.
t.test("a model's current rate is its own, and a model with rates cannot be deleted", async (t) => {
  const { db } = await createTestDatabase(t);
  await seedCatalog(prismaOf(db));
  await db.pool.query(
    `INSERT INTO catalog_models (id, display_name, owned_by, provider, provider_model, capabilities, audio, modalities)
     VALUES ('local/other', 'Other', 'local', 'local', 'echo', '{}', '{}', '{}')`,
  );
  const foreignKeyViolation = { code: '23503' };
  await t.rejects(
    db.pool.query(`UPDATE catalog_models SET current_rate_id = $1 WHERE id = 'local/other'`, [RATE_ID]),
    foreignKeyViolation,
    "another model's rate cannot be current",
  );
  await t.rejects(db.pool.query(`UPDATE catalog_models SET current_rate_id = 'rate_none' WHERE id = 'local/other'`), foreignKeyViolation);
  await t.rejects(db.pool.query('DELETE FROM catalog_models WHERE id = $1', [MODEL_ID]), foreignKeyViolation, 'a model with a rate stays');
  await t.rejects(db.pool.query('TRUNCATE rate_snapshots'), /foreign key/, 'rates cannot be truncated away');
  await db.pool.query(`DELETE FROM catalog_models WHERE id = 'local/other'`);
  t.pass('a model without a rate can be deleted');
});

t.test('wallet checks refuse a negative balance and an uncovered reservation', async (t) => {
  const { db } = await createTestDatabase(t);
  const checkViolation = { code: '23514' };
  await t.rejects(db.pool.query(`INSERT INTO wallets (id, balance_cents) VALUES ('wal_neg', -1)`), checkViolation);
  await t.rejects(prismaOf(db).wallet.create({ data: { id: 'wal_neg', balanceCents: -1n } }), /wallets_balance_nonnegative/);
  await prismaOf(db).wallet.create({ data: { id: 'wal_ok', balanceCents: 10n } });
  await t.rejects(db.pool.query(`UPDATE wallets SET reserved_cents = 11 WHERE id = 'wal_ok'`), checkViolation);
  await t.rejects(db.pool.query(`UPDATE wallets SET balance_cents = balance_cents - 11 WHERE id = 'wal_ok'`), checkViolation);
  const wallet = await prismaOf(db).wallet.findUniqueOrThrow({ where: { id: 'wal_ok' } });
  t.equal(wallet.balanceCents, 10n, 'BigInt columns come back as bigint');
});
