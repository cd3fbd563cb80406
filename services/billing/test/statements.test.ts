// Every statement this unit declares (sqlStatement of @s2s/db) against a freshly migrated database: PostgreSQL
// accepts it and its columns are its row schema's (checkDeclaredStatements). The modules that declare them:
import '../src/settle.js';
import '../src/sweeper.js';
import '../src/usage-store.js';
import '../src/leases.js';
import { fileURLToPath } from 'node:url';
import { checkDeclaredStatements, createTestDatabase } from '@s2s/db/testing';
import t from 'tap';

t.test('every declared statement matches the migrated schema', async (t) => {
  const { db } = await createTestDatabase(t);
  const { checked, problems } = await checkDeclaredStatements(db.pool, fileURLToPath(new URL('../src', import.meta.url)));
  t.same(problems, []);
  t.ok(checked.length > 0, `checked: ${checked.join(', ')}`);
});
