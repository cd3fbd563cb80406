// Creates the database when missing and applies pending migrations: `pnpm run migrate [url]`.
import { databaseNameOf, ensureDatabase, migrate } from './migrate.js';

const DEFAULT_DATABASE_URL = 'postgres://postgres@127.0.0.1:5432/s2s_gateway';

async function main(): Promise<void> {
  const url = process.argv[2] ?? process.env.DATABASE_URL ?? DEFAULT_DATABASE_URL;
  await ensureDatabase(url);
  await migrate(url);
  // The database name only: the URL may carry a password.
  process.stderr.write(`[migrate] ${databaseNameOf(url)} is up to date\n`);
}

main().catch((err: unknown) => {
  process.stderr.write(`[migrate] failed: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exitCode = 1;
});
