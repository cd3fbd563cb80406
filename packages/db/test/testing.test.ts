import t from 'tap';
import { prismaOf } from '../src/prisma.js';
import type { DbOrTx } from '../src/prisma.js';
import { withClient } from '../src/migrate.js';
import { adminDatabaseUrl, checkLedgerInvariants, createTestDatabase } from '../src/testing.js';
import { MODEL_ID, RATE_ID, seedCatalog, seedSession, seedWallet } from './fixtures/seed.js';

async function databaseExists(name: string): Promise<boolean> {
  const { rowCount } = await withClient(adminDatabaseUrl(), (c) => c.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]));
  return (rowCount ?? 0) > 0;
}

/** A credited wallet with one settled session (billed 120 of 1000) and one open session reserving 50. */
async function seedConsistentLedger(db: DbOrTx): Promise<void> {
  await seedCatalog(db);
  const keyId = await seedWallet(db, 'wal_a', 1000n);
  await seedSession(db, { id: 'vs_settled', walletId: 'wal_a', keyId, preauthorizedCents: 200, reservedCents: 0 });
  await db.voiceSession.update({
    where: { id: 'vs_settled' },
    data: { status: 'completed', settledAt: new Date(), billedCents: 120, audioInMs: 1500n },
  });
  await db.settlement.create({
    data: {
      sessionId: 'vs_settled',
      status: 'completed',
      billedCents: 120,
      audioInMs: 1500n,
      audioOutMs: 0n,
      inputAudioTokens: 15n,
      outputAudioTokens: 0n,
    },
  });
  await db.ledgerEntry.create({ data: { walletId: 'wal_a', kind: 'charge', amountCents: 120n, sessionId: 'vs_settled' } });
  await seedSession(db, { id: 'vs_open', walletId: 'wal_a', keyId, preauthorizedCents: 50, reservedCents: 50 });
  await db.wallet.update({ where: { id: 'wal_a' }, data: { balanceCents: 880n, reservedCents: 50n } });
}

t.test('each test database is fresh, migrated and isolated', async (t) => {
  const [a, b] = await Promise.all([createTestDatabase(t), createTestDatabase(t)]);
  t.not(a.url, b.url);
  await prismaOf(a.db).wallet.create({ data: { id: 'wal_only_in_a', balanceCents: 5n } });
  t.equal(await prismaOf(a.db).wallet.count(), 1);
  t.equal(await prismaOf(b.db).wallet.count(), 0, 'the other database does not see it');
});

t.test('drop closes the client and removes the database, once', async (t) => {
  const test = await createTestDatabase();
  const name = new URL(test.url).pathname.slice(1);
  t.ok(await databaseExists(name));
  await test.drop();
  await test.drop();
  t.notOk(await databaseExists(name));
  await t.rejects(test.db.pool.query('SELECT 1'), 'the pool is closed');
});

t.test('the template is named after the migrations and refuses connections', async (t) => {
  await createTestDatabase(t);
  const { rows } = await withClient(adminDatabaseUrl(), (c) =>
    c.query<{ datname: string; datistemplate: boolean; datallowconn: boolean }>(
      "SELECT datname, datistemplate, datallowconn FROM pg_database WHERE datname ~ '^s2s_tmpl_[0-9a-f]{8}$'",
    ),
  );
  t.ok(rows.length >= 1, 'a template exists');
  t.ok(rows.every((r) => r.datistemplate && !r.datallowconn));
});

t.test('a consistent ledger has no violations', async (t) => {
  const { db } = await createTestDatabase(t);
  await prismaOf(db).$transaction((tx) => seedConsistentLedger(tx));
  t.same(await checkLedgerInvariants(db.pool), []);
});

t.test('an inconsistent ledger is reported', async (t) => {
  const { db } = await createTestDatabase(t);
  await prismaOf(db).$transaction((tx) => seedConsistentLedger(tx));
  // A balance no ledger row explains, a reservation no session holds, a charge without settlement.
  await db.pool.query(`INSERT INTO wallets (id, balance_cents) VALUES ('wal_unexplained', 100)`);
  await db.pool.query(`UPDATE wallets SET reserved_cents = 60 WHERE id = 'wal_a'`);
  await db.pool.query(`INSERT INTO ledger_entries (wallet_id, kind, amount_cents, session_id) VALUES ('wal_a', 'charge', 10, 'vs_open')`);
  const violations = await checkLedgerInvariants(db.pool);
  // A charge row is named by its id; the session it claims to charge is in the detail.
  const seen = violations
    .map((v) => (v.invariant === 'charge_has_settlement' ? `${v.invariant} ${v.detail}` : `${v.invariant} ${v.subject}`))
    .sort();
  t.same(seen, [
    'charge_has_settlement charge for session vs_open has no settlements row',
    'ledger_matches_balance wal_a',
    'ledger_matches_balance wal_unexplained',
    'reservations_match wal_a',
  ]);
  t.match(violations.find((v) => v.subject === 'wal_unexplained')?.detail, /credits - charges = 0, balance_cents = 100/);
});

t.test('a settled session without its settlement and charge is reported', async (t) => {
  const { db } = await createTestDatabase(t);
  await seedCatalog(prismaOf(db));
  const keyId = await seedWallet(prismaOf(db), 'wal_b', 500n);
  await seedSession(prismaOf(db), { id: 'vs_half', walletId: 'wal_b', keyId, preauthorizedCents: 100, reservedCents: 0 });
  await prismaOf(db).voiceSession.update({
    where: { id: 'vs_half' },
    data: { status: 'completed', settledAt: new Date(), billedCents: 40 },
  });
  const violations = await checkLedgerInvariants(db.pool);
  t.same(
    violations.map((v) => v.invariant),
    ['settled_session_billed_once'],
  );
  t.match(violations[0]?.detail, /0 settlements rows; 0 charge ledger rows/);
});

t.test('a session whose rate snapshot is missing or of another model is reported', async (t) => {
  const { db } = await createTestDatabase(t);
  await seedCatalog(prismaOf(db));
  const keyId = await seedWallet(prismaOf(db), 'wal_c', 500n);
  await db.pool.query(
    `INSERT INTO catalog_models (id, display_name, owned_by, provider, provider_model, capabilities, audio, modalities)
     VALUES ('local/other', 'Other', 'local', 'local', 'echo', '{}', '{}', '{}')`,
  );
  // Without the foreign keys nothing refuses these rows; the invariant finds them.
  for (const [id, model, rate] of [
    ['vs_no_rate', MODEL_ID, 'rate_none'],
    ['vs_wrong_model', 'local/other', RATE_ID],
  ]) {
    await db.pool.query(
      `INSERT INTO voice_sessions (id, key_id, wallet_id, model_id, rate_snapshot_id, status, preauthorized_cents, reserved_cents,
                                   trace_id, idle_timeout_seconds, max_ends_at)
       VALUES ($1, $2, 'wal_c', $3, $4, 'ready', 0, 0, '', 300, now())`,
      [id, keyId, model, rate],
    );
  }
  const violations = await checkLedgerInvariants(db.pool);
  t.same(violations.map((v) => `${v.invariant} ${v.subject}`).sort(), [
    'session_rate_of_model vs_no_rate',
    'session_rate_of_model vs_wrong_model',
  ]);
  t.match(violations.find((v) => v.subject === 'vs_wrong_model')?.detail, /is of model local\/echo/);
});
