// The migrated database must be exactly what schema.prisma describes: Prisma never migrates here
// (dbmate does), so this test is what keeps the two in step.
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { createTestDatabase } from '../src/testing.js';
import { actualShape, diffShapes, expectedShape, loadPrismaSchema } from './fixtures/schema-diff.js';

const SCHEMA_PATH = fileURLToPath(new URL('../prisma/schema.prisma', import.meta.url));

t.test('the migrated database matches schema.prisma', async (t) => {
  const { db } = await createTestDatabase(t);
  const expected = expectedShape(await loadPrismaSchema(SCHEMA_PATH));
  t.ok(expected.size >= 9, 'the schema has its models');
  t.same(diffShapes(expected, await actualShape(db.pool)), []);
});

// Proves the comparison has teeth: each kind of drift is reported.
t.test('drift between the database and the schema is reported', async (t) => {
  const { db } = await createTestDatabase(t);
  await db.pool.query(`
    ALTER TABLE wallets DROP COLUMN updated_at;
    ALTER TABLE api_keys ALTER COLUMN label TYPE varchar(40);
    ALTER TABLE voice_sessions ALTER COLUMN idle_timeout_seconds TYPE bigint;
    ALTER TABLE ledger_entries ALTER COLUMN kind DROP NOT NULL;
    ALTER TABLE catalog_models ALTER COLUMN enabled SET DEFAULT false;
    ALTER TABLE settlements ADD COLUMN note text;
    DROP INDEX voice_sessions_settled_at_id_idx;
    DROP INDEX api_keys_secret_hash_key;
    CREATE INDEX extra_idx ON wallets (balance_cents);
    ALTER TABLE idempotency_keys DROP CONSTRAINT idempotency_keys_pkey;
    ALTER TABLE idempotency_keys ADD PRIMARY KEY (key_id);
    ALTER TABLE session_attachments DROP CONSTRAINT session_attachments_session_id_fkey;
    CREATE TABLE stray (id int);
  `);
  const expected = expectedShape(await loadPrismaSchema(SCHEMA_PATH));
  const issues = diffShapes(expected, await actualShape(db.pool));
  const wanted = [
    'column wallets.updated_at is missing',
    'column api_keys.label is character varying(40), schema says text',
    'column voice_sessions.idle_timeout_seconds is bigint, schema says integer',
    'column ledger_entries.kind is nullable, schema says NOT NULL',
    'column catalog_models.enabled has default false',
    'column settlements.note is not in the Prisma schema',
    'index voice_sessions_settled_at_id_idx on voice_sessions (index (settled_at, id)) is missing',
    'index api_keys_secret_hash_key on api_keys (unique (secret_hash)) is missing',
    'index extra_idx on wallets (index (balance_cents)) is not in the Prisma schema',
    'index idempotency_keys_pkey on idempotency_keys is primary key (key_id), schema says primary key (key_id, idempotency_key)',
    'foreign key session_attachments_session_id_fkey on session_attachments',
    'table stray is not in the Prisma schema',
  ];
  for (const w of wanted)
    t.ok(
      issues.some((i) => i.startsWith(w)),
      w,
    );
  t.equal(issues.length, wanted.length, 'nothing else is reported');
  if (issues.length !== wanted.length) t.comment(issues.join('\n'));
});
