// Test helpers: a fresh, migrated database per test, cloned from a template built once per server,
// so each test pays one CREATE DATABASE instead of a migration run.
import { createHash, randomBytes } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import pg from 'pg';
import { createDb, type DbHandle } from './client.js';
import { databaseExists, MIGRATIONS_DIR, migrate, withClient, withDatabase } from './migrate.js';
import { once } from './once.js';

export { checkLedgerInvariants, type LedgerViolation } from './ledger-invariants.js';
export { createWalletAndKey, insertCurrentRate, type WalletKeyFixture } from './fixtures.js';
export {
  checkDeclaredStatements,
  COLUMN_KINDS,
  describeStatement,
  kindFits,
  rawRowQueries,
  schemaKinds,
  statementProblems,
} from './statement-check.js';

export interface TestDatabase {
  /** Connection URL of the new database. */
  url: string;
  /** A client on it (small pool), closed by drop(). */
  db: DbHandle;
  /** Closes the client and drops the database; safe to call more than once. */
  drop(): Promise<void>;
}

/** The part of a tap `Test` we use, so this package does not depend on tap. */
export interface TeardownHost {
  teardown(fn: () => unknown): void;
}

const DEFAULT_ADMIN_URL = 'postgres://postgres@127.0.0.1:5432/postgres';
const TEMPLATE_LOCK_SQL = "SELECT pg_advisory_lock(hashtext('s2s_db test template'))";
const TEMPLATE_UNLOCK_SQL = "SELECT pg_advisory_unlock(hashtext('s2s_db test template'))";

/** The server's maintenance database that test databases are created from: `TEST_DATABASE_URL`. */
export function adminDatabaseUrl(): string {
  return process.env.TEST_DATABASE_URL ?? DEFAULT_ADMIN_URL;
}

/** Creates a uniquely named database with every migration applied; dropped in `t.teardown` when `t` is given. */
export async function createTestDatabase(t?: TeardownHost): Promise<TestDatabase> {
  const adminUrl = adminDatabaseUrl();
  const template = await templateFor(adminUrl);
  const name = `s2s_test_${randomBytes(6).toString('hex')}`;
  await withClient(adminUrl, (c) => c.query(`CREATE DATABASE ${ident(name)} TEMPLATE ${ident(template)}`));
  const url = withDatabase(adminUrl, name);
  const db = createDb(url, { max: 4 });
  const drop = once(async () => {
    await db.close();
    await withClient(adminUrl, (c) => c.query(`DROP DATABASE IF EXISTS ${ident(name)} WITH (FORCE)`));
  });
  t?.teardown(drop);
  return { url, db, drop };
}

// One template check per process and admin server; later calls only clone.
const templates = new Map<string, Promise<string>>();

function templateFor(adminUrl: string): Promise<string> {
  let ready = templates.get(adminUrl);
  if (!ready) {
    ready = ensureTemplate(adminUrl);
    ready.catch(() => templates.delete(adminUrl));
    templates.set(adminUrl, ready);
  }
  return ready;
}

/** Builds `s2s_tmpl_<hash of the migrations>` once per server; parallel test processes wait on the lock. */
async function ensureTemplate(adminUrl: string): Promise<string> {
  const name = `s2s_tmpl_${await migrationsHash()}`;
  await withClient(adminUrl, async (c) => {
    await c.query(TEMPLATE_LOCK_SQL);
    try {
      if (!(await databaseExists(c, name))) await buildTemplate(c, adminUrl, name);
    } finally {
      await c.query(TEMPLATE_UNLOCK_SQL);
    }
  });
  return name;
}

async function buildTemplate(c: pg.Client, adminUrl: string, name: string): Promise<void> {
  // Migrate under a scratch name and rename at the end, so the template name only ever
  // exists fully migrated; a scratch left by a crashed run is dropped first.
  const scratch = `${name}_build`;
  await c.query(`DROP DATABASE IF EXISTS ${ident(scratch)} WITH (FORCE)`);
  await c.query(`CREATE DATABASE ${ident(scratch)}`);
  await migrate(withDatabase(adminUrl, scratch));
  await c.query(`ALTER DATABASE ${ident(scratch)} RENAME TO ${ident(name)}`);
  // Cloning fails while anyone is connected to the template, so refuse connections to it.
  await c.query(`ALTER DATABASE ${ident(name)} WITH IS_TEMPLATE true ALLOW_CONNECTIONS false`);
}

/** First 8 hex of a SHA-256 over the migration files' names and contents. */
async function migrationsHash(): Promise<string> {
  const hash = createHash('sha256');
  const files = (await readdir(MIGRATIONS_DIR)).filter((f) => f.endsWith('.sql')).sort();
  for (const file of files) {
    hash
      .update(file)
      .update('\0')
      .update(await readFile(join(MIGRATIONS_DIR, file)))
      .update('\0');
  }
  return hash.digest('hex').slice(0, 8);
}

function ident(name: string): string {
  return pg.escapeIdentifier(name);
}
