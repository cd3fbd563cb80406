// The typed statements (src/statement.ts) and their check (src/statement-check.ts): the check fails when a
// row schema and the migrated database disagree, and no product code reads rows of an unchecked statement.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { z } from 'zod';
import { sqlStatement } from '../src/statement.js';
import {
  checkDeclaredStatements,
  COLUMN_KINDS,
  createTestDatabase,
  describeStatement,
  kindFits,
  rawRowQueries,
  schemaKinds,
  statementProblems,
} from '../src/testing.js';
import '../src/ledger-invariants.js';

const ROOT = fileURLToPath(new URL('../../..', import.meta.url));
const SRC = fileURLToPath(new URL('../src', import.meta.url));

// Declared here, so registered under test/ and outside every srcDir a statements test checks.
const KEY = sqlStatement(import.meta.url, {
  name: 'db_test_key',
  text: 'SELECT id, wallet_id, revoked_at, created_at FROM api_keys WHERE secret_hash = $1',
  row: z.object({ id: z.string(), wallet_id: z.string(), revoked_at: z.date().nullable(), created_at: z.date() }),
});

/** A value of every type COLUMN_KINDS maps, selected through the pool of createDb. */
const SAMPLES: Record<string, string> = {
  bool: 'true',
  char: `'a'::"char"`,
  name: `'a'::name`,
  int8: '9007199254740991::int8',
  int2: '1::int2',
  int4: '1::int4',
  text: `'a'::text`,
  oid: '1::oid',
  json: `'{"a":1}'::json`,
  'json[]': `ARRAY['{"a":1}'::json]`,
  float4: '1.5::float4',
  float8: '1.5::float8',
  'bool[]': 'ARRAY[true]',
  'int2[]': 'ARRAY[1::int2]',
  'int4[]': 'ARRAY[1::int4]',
  'text[]': `ARRAY['a'::text]`,
  'varchar[]': `ARRAY['a'::varchar]`,
  'int8[]': 'ARRAY[1::int8]',
  'float4[]': 'ARRAY[1.5::float4]',
  'float8[]': 'ARRAY[1.5::float8]',
  bpchar: `'a'::bpchar`,
  varchar: `'a'::varchar`,
  date: `'2026-01-02'::date`,
  timestamp: `'2026-01-02 03:04:05'::timestamp`,
  'timestamp[]': `ARRAY['2026-01-02 03:04:05'::timestamp]`,
  timestamptz: 'now()',
  'timestamptz[]': 'ARRAY[now()]',
  numeric: '1.5::numeric',
  uuid: 'gen_random_uuid()',
  'uuid[]': 'ARRAY[gen_random_uuid()]',
  jsonb: `'[1]'::jsonb`,
  'jsonb[]': `ARRAY['{"a":1}'::jsonb]`,
};

function valueKind(v: unknown): string {
  if (v instanceof Date) return 'date';
  if (Array.isArray(v)) return `${v.length > 0 ? valueKind(v[0]) : 'unknown'}[]`;
  if (v === null) return 'null';
  return typeof v;
}

t.test('COLUMN_KINDS says what the pool of createDb gives for each type', async (t) => {
  const { db } = await createTestDatabase(t);
  t.same(Object.keys(SAMPLES).sort(), [...COLUMN_KINDS.values()].map((c) => c.type).sort(), 'every mapped type has a sample');
  for (const [oid, { type, kind }] of COLUMN_KINDS) {
    const result = await db.pool.query(`SELECT ${SAMPLES[type]} AS v`);
    t.equal(result.fields[0]?.dataTypeID, oid, `${type} is oid ${oid}`);
    const value: unknown = result.rows[0]?.v;
    // A json value is whatever JSON.parse gives: the sample's object or array.
    const got = kind.startsWith('json') ? kind : valueKind(value);
    t.equal(got, kind, `${type}: node-postgres gives ${valueKind(value)}`);
    if (kind.startsWith('json')) t.equal(typeof value, 'object', `${type} arrives parsed`);
  }
});

t.test('schemaKinds and kindFits', async (t) => {
  t.same(schemaKinds(z.string().nullable()), ['string', 'null']);
  t.same(schemaKinds(z.enum(['a', 'b'])), ['string']);
  t.same(schemaKinds(z.array(z.number())), ['number[]']);
  t.same(schemaKinds(z.union([z.array(z.object({})), z.null()])), ['object[]', 'null']);
  t.same(schemaKinds(z.literal(3)), ['number']);
  t.ok(kindFits('json', 'object'));
  t.ok(kindFits('json', 'object[]'), 'a jsonb array');
  t.ok(kindFits('json', 'unknown'));
  t.notOk(kindFits('json', 'string'), 'a jsonb column is no string');
  t.ok(kindFits('string[]', 'string[]'));
  t.ok(kindFits('string[]', 'null[]'), 'null elements');
  t.notOk(kindFits('string[]', 'number[]'));
  t.notOk(kindFits('number', 'string'));
  t.ok(kindFits('date', 'null'), 'nullability is not checked');
  t.ok(kindFits('string', 'null'), 'z.null(): a column always NULL');
});

t.test('describeStatement returns the columns without running the statement', async (t) => {
  const { db } = await createTestDatabase(t);
  const client = await db.pool.connect();
  t.teardown(() => client.release());
  t.same(await describeStatement(client, `INSERT INTO wallets (id, balance_cents) VALUES ($1, $2) RETURNING id, balance_cents`), [
    { name: 'id', typeId: 25 },
    { name: 'balance_cents', typeId: 20 },
  ]);
  t.same(await describeStatement(client, `DELETE FROM wallets WHERE id = $1`), [], 'no rows: no columns');
  await t.rejects(describeStatement(client, 'SELECT nope FROM wallets'), /column "nope" does not exist/);
  t.same((await client.query('SELECT count(*)::int AS n FROM wallets')).rows, [{ n: 0 }], 'the INSERT did not run');
  t.same((await client.query('SELECT 1 AS one')).rows, [{ one: 1 }], 'the connection is usable after an error');
});

t.test('a statement whose schema matches passes; one that does not fails, naming the column', async (t) => {
  const { db } = await createTestDatabase(t);
  const client = await db.pool.connect();
  t.teardown(() => client.release());
  t.same(await statementProblems(client, KEY), []);

  const copy = (row: z.ZodObject) => sqlStatement(import.meta.url, { text: KEY.text, row });
  const renamed = copy(z.object({ id: z.string(), walletId: z.string(), revoked_at: z.date().nullable(), created_at: z.date() }));
  t.same(await statementProblems(client, renamed), [
    'column "wallet_id" (text) is not in the row schema',
    `the row schema's "walletId" is not a column the statement returns`,
  ]);
  const retyped = copy(z.object({ id: z.string(), wallet_id: z.string(), revoked_at: z.date().nullable(), created_at: z.number() }));
  t.same(await statementProblems(client, retyped), [
    'column "created_at" is timestamptz (node-postgres gives date), the row schema says number',
  ]);
  const refused = sqlStatement(import.meta.url, {
    text: 'SELECT id, wallet FROM api_keys',
    row: z.object({ id: z.string(), wallet: z.string() }),
  });
  t.match(await statementProblems(client, refused), [/^PostgreSQL refuses it: column "wallet" does not exist/]);
});

t.test('a migration that renames or retypes a column fails the check of a statement that was fine', async (t) => {
  const { db } = await createTestDatabase(t);
  const client = await db.pool.connect();
  t.teardown(() => client.release());
  await client.query('BEGIN');
  t.teardown(() => client.query('ROLLBACK'));
  await client.query('ALTER TABLE api_keys ALTER COLUMN created_at TYPE text');
  t.same(await statementProblems(client, KEY), ['column "created_at" is text (node-postgres gives string), the row schema says date']);
  await client.query('ALTER TABLE api_keys RENAME COLUMN wallet_id TO wallet');
  t.match(await statementProblems(client, KEY), [/^PostgreSQL refuses it: column "wallet_id" does not exist/]);
});

t.test('run sends the statement under its name, or unnamed', async (t) => {
  const { db } = await createTestDatabase(t);
  const client = await db.pool.connect();
  t.teardown(() => client.release());
  const { rows } = await KEY.run(client, ['nobody']);
  t.same(rows, []);
  const prepared = await client.query(`SELECT name FROM pg_prepared_statements WHERE name = 'db_test_key'`);
  t.equal(prepared.rowCount, 1, 'prepared once on this connection');
  const unnamed = sqlStatement(import.meta.url, { text: 'SELECT 2::int4 AS two', row: z.object({ two: z.number() }) });
  t.same((await unnamed.run(client)).rows, [{ two: 2 }]);
  t.equal((await client.query('SELECT count(*)::int AS n FROM pg_prepared_statements')).rows[0]?.n, 1, 'nothing else prepared');
});

t.test("@s2s/db's own statements match the migrated schema", async (t) => {
  const { db } = await createTestDatabase(t);
  const { checked, problems } = await checkDeclaredStatements(db.pool, SRC);
  t.same(problems, []);
  t.equal(checked.length, 7, 'the ledger invariants');
});

t.test('checkDeclaredStatements reports a declaring file whose statements were not imported', async (t) => {
  const { db } = await createTestDatabase(t);
  // This test file declares statements and is registered; src/ has a file it does not import: a fixture dir.
  const dir = fileURLToPath(new URL('./fixtures/statements', import.meta.url));
  const { problems } = await checkDeclaredStatements(db.pool, dir);
  t.same(problems, ['unimported.ts declares 1 statement(s), 0 registered: import it in the statements test']);
});

t.test('rawRowQueries finds the rows of raw queries', async (t) => {
  const text = [
    'const { rows } = await ctx.db.pool.query<{ id: string }>(',
    "const { rows } = await sql.query('SELECT id FROM t', [x]);",
    "const result = await db.pool.query('SELECT id FROM t');",
    'return result.rows[0];',
    "const { rowCount } = await db.pool.query('DELETE FROM t');",
    "await sql.query('UPDATE t SET a = 1');",
    'const { rows } = await STATEMENT.run(sql, [x]);',
  ].join('\n');
  t.same(
    rawRowQueries(text).map((f) => f.line),
    [1, 2, 4],
  );
});

/** The product source files: every package's and service's src/, Prisma's generated client aside. */
function productFiles(): string[] {
  const files: string[] = [];
  for (const top of ['packages', 'services']) {
    for (const unit of readdirSync(join(ROOT, top))) {
      const src = join(ROOT, top, unit, 'src');
      if (!existsSync(src)) continue;
      for (const e of readdirSync(src, { withFileTypes: true, recursive: true })) {
        const file = join(e.parentPath, e.name);
        if (e.isFile() && e.name.endsWith('.ts') && !file.includes('/generated/')) files.push(file);
      }
    }
  }
  return files;
}

t.test('no product code reads the rows of a raw query', async (t) => {
  // statement.ts is where a declared statement's rows get their schema's type; statement-check.ts is this lint.
  const exempt = new Set([join(SRC, 'statement.ts'), join(SRC, 'statement-check.ts')]);
  const found = productFiles()
    .filter((f) => !exempt.has(f))
    .flatMap((f) => rawRowQueries(readFileSync(f, 'utf8')).map((q) => `${relative(ROOT, f)}:${q.line}: ${q.text}`));
  t.same(found, [], 'declare these with sqlStatement (@s2s/db)');
});

t.test('every package or service that declares statements checks them in test/statements.test.ts', async (t) => {
  const units = new Set(
    productFiles()
      .filter((f) => /\bsqlStatement\(/.test(readFileSync(f, 'utf8')))
      .map((f) => relative(ROOT, f).split('/').slice(0, 2).join('/')),
  );
  t.ok(units.size >= 4, `declaring units: ${[...units].join(', ')}`);
  for (const unit of units) {
    const test = join(ROOT, unit, 'test', 'statements.test.ts');
    t.ok(
      existsSync(test) && readFileSync(test, 'utf8').includes('checkDeclaredStatements('),
      `${unit}/test/statements.test.ts checks them`,
    );
  }
});
