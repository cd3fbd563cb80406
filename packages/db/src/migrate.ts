import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { resolveBinary } from 'dbmate';
import pg from 'pg';

const execFileAsync = promisify(execFile);

/** Absolute path of the dbmate migrations shipped with this package. */
export const MIGRATIONS_DIR = fileURLToPath(new URL('../migrations', import.meta.url));

/** Applies every pending migration with dbmate; a no-op when the database is current. */
export async function migrate(databaseUrl: string): Promise<void> {
  const args = ['--url', withSslMode(databaseUrl), '--migrations-dir', MIGRATIONS_DIR, '--no-dump-schema', 'up'];
  try {
    await execFileAsync(resolveBinary(), args);
  } catch (err) {
    // dbmate reports on stderr; the rejected error's message would repeat the URL (and any password).
    const stderr = (err as { stderr?: string }).stderr?.trim();
    // eslint-disable-next-line preserve-caught-error -- the cause would carry the URL too
    throw new Error(`dbmate up failed: ${stderr || 'no output'}`);
  }
}

/** Creates the URL's database when it does not exist yet (connecting to `postgres` on the same server). */
export async function ensureDatabase(databaseUrl: string): Promise<void> {
  const name = databaseNameOf(databaseUrl);
  await withClient(withDatabase(databaseUrl, 'postgres'), async (client) => {
    if (await databaseExists(client, name)) return;
    // A concurrent creator wins the race with 42P04, or 23505 on pg_database's unique index.
    await client.query(`CREATE DATABASE ${pg.escapeIdentifier(name)}`).catch(ignoreCodes('42P04', '23505'));
  });
}

export async function databaseExists(client: pg.Client, name: string): Promise<boolean> {
  const { rowCount } = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
  return (rowCount ?? 0) > 0;
}

/** The database name of a postgres:// URL. */
export function databaseNameOf(databaseUrl: string): string {
  const name = decodeURIComponent(new URL(databaseUrl).pathname.replace(/^\//, ''));
  if (!name) throw new Error('database URL names no database');
  return name;
}

/** The same server and credentials, another database. */
export function withDatabase(databaseUrl: string, name: string): string {
  const url = new URL(databaseUrl);
  url.pathname = `/${encodeURIComponent(name)}`;
  return url.toString();
}

/** Runs `fn` on a one-off connection, closed afterwards. */
export async function withClient<T>(databaseUrl: string, fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: databaseUrl });
  // A dropped connection emits 'error' on the client; the pending query rejects anyway.
  client.on('error', () => {});
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

// dbmate's driver (lib/pq) defaults to sslmode=require, which a local server without TLS refuses;
// an explicit sslmode in the URL is kept as given.
function withSslMode(databaseUrl: string): string {
  const url = new URL(databaseUrl);
  if (!url.searchParams.has('sslmode')) url.searchParams.set('sslmode', 'disable');
  return url.toString();
}

function ignoreCodes(...codes: string[]): (err: unknown) => void {
  return (err) => {
    if (!codes.includes(String((err as { code?: unknown }).code))) throw err;
  };
}
