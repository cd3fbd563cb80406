// The packed scale bench's schema step. The pack carries @s2s/db's migration files but not dbmate (a 34 MB Go
// binary, over the pack's size budget), so it applies the files itself as `dbmate up` does: each file's
// `-- migrate:up` section, in file-name order, in a transaction (unless `transaction:false`), recorded in
// schema_migrations, skipping versions already there. bench/test/scale-pack.test.ts checks it against dbmate.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { MIGRATIONS_DIR } from '@s2s/db';

interface Migration {
  version: string;
  up: string;
  transaction: boolean;
}

/** The migrations of `dir` (dbmate's file format), oldest first. */
export function readMigrations(dir: string = MIGRATIONS_DIR): Migration[] {
  return readdirSync(dir)
    .filter((f) => /^\d+_.*\.sql$/.test(f))
    .sort()
    .map((file) => {
      const text = readFileSync(join(dir, file), 'utf8');
      const up = /^-- migrate:up([^\n]*)\n([\s\S]*?)(?=^-- migrate:down|(?![\s\S]))/m.exec(text);
      if (!up) throw new Error(`${file}: no "-- migrate:up" section`);
      return { version: file.split('_')[0]!, up: up[2]!, transaction: !/transaction:false/.test(up[1]!) };
    });
}

/** Applies the pending migrations of `dir` to the database at `url`. */
export async function applyMigrations(url: string, dir: string = MIGRATIONS_DIR): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query('CREATE TABLE IF NOT EXISTS schema_migrations (version varchar(128) PRIMARY KEY)');
    const { rows } = await client.query<{ version: string }>('SELECT version FROM schema_migrations');
    const done = new Set(rows.map((r) => r.version));
    for (const m of readMigrations(dir)) {
      if (done.has(m.version)) continue;
      if (m.transaction) await client.query('BEGIN');
      try {
        await client.query(m.up);
        await client.query('INSERT INTO schema_migrations (version) VALUES ($1)', [m.version]);
        if (m.transaction) await client.query('COMMIT');
      } catch (err) {
        if (m.transaction) await client.query('ROLLBACK');
        throw new Error(`migration ${m.version}: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
      }
    }
  } finally {
    await client.end();
  }
}
