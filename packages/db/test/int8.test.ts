// bigint columns come back from the pool as exact numbers; beyond 2^53 - 1 as BigInt, never rounded.
import t from 'tap';
import { parseInt8 } from '../src/client.js';
import { createTestDatabase } from '../src/testing.js';

t.test('parseInt8 keeps every value exact', async (t) => {
  t.equal(parseInt8('0'), 0);
  t.equal(parseInt8('-42'), -42);
  t.equal(parseInt8('9007199254740991'), 9007199254740991);
  t.equal(parseInt8('9007199254740992'), 9007199254740992n, 'past 2^53 - 1: a BigInt');
  t.equal(parseInt8('18014398509481821'), 18014398509481821n, 'the rounded figure of issue 8 stays exact');
  t.equal(parseInt8('-9223372036854775808'), -9223372036854775808n);
});

t.test('the pool reads bigint columns as numbers', async (t) => {
  const { db } = await createTestDatabase(t);
  const { rows } = await db.pool.query<{ a: unknown; b: unknown; n: unknown }>(
    `SELECT 9007199254740991::bigint AS a, 9007199254740993::bigint AS b, count(*) AS n FROM generate_series(1, 3)`,
  );
  t.same(rows[0], { a: 9007199254740991, b: 9007199254740993n, n: 3 });
  t.equal(typeof rows[0]?.a, 'number');
});
