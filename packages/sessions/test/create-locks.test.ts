// The create statement's relation locks stay on PostgreSQL's per-backend fast path (issue 28, item 5).
// PostgreSQL 15 keeps 16 relations per backend there; a lock that does not fit (or a new mode on a relation once
// the 16 slots are taken) goes to the shared lock table, whose partition locks every concurrent create then takes:
// `LWLock:LockManager` under load. This runs the very statement `createSession` sends, against the real
// database, and looks at its locks at two moments: at its peak (blocked in the last step, the referential check
// of the session's key, with every index it writes still open) and after it, in its transaction.
import t from 'tap';
import { createTestDatabase, createWalletAndKey, insertCurrentRate } from '@s2s/db/testing';
import { newId, RATE_FIELDS, requestFingerprint, type RateField } from '@s2s/core';
import type { Sql } from '@s2s/db';
import { createStatement, type CreateSessionInput } from '../src/index.js';

/** PostgreSQL 15's FP_LOCK_SLOTS_PER_BACKEND. */
const FAST_PATH_SLOTS = 16;
const MODEL = 'local/locks';
/** Enough runs on one connection for custom plans (the first five) and then the cached generic plan. */
const RUNS = 8;

interface LockRow {
  relation: string;
  mode: string;
  fastpath: boolean;
}

const LOCKS_SQL = `SELECT relation::regclass::text AS relation, mode, fastpath FROM pg_locks
                    WHERE pid = $1 AND locktype = 'relation' AND relation <> 'pg_locks'::regclass ORDER BY 1, 2`;

async function fixtures(t: Parameters<typeof createTestDatabase>[0]) {
  const { db } = await createTestDatabase(t);
  await db.pool.query(
    `INSERT INTO catalog_models (id, display_name, owned_by, provider, provider_model, enabled, approved, capabilities, audio, modalities)
     VALUES ($1, $1, 'test', 'local', 'm', true, true, '{"speech_to_speech":true}', '{}', '{}')`,
    [MODEL],
  );
  const rateId = newId('rate');
  const rate = Object.fromEntries(RATE_FIELDS.map((f) => [f, f === 'per_minute' ? 100 : 0])) as Record<RateField, number>;
  await insertCurrentRate(db.pool, { rateId, modelId: MODEL, rate });
  const key = await createWalletAndKey(db.pool, { balanceCents: 1_000_000 });
  const { rows } = await db.pool.query<{ secret_hash: string }>('SELECT secret_hash FROM api_keys WHERE id = $1', [key.keyId]);
  return { db, key, secretHash: rows[0]!.secret_hash, rateId };
}

/**
 * Runs one create on `client` inside a transaction while `observer` holds the key's row FOR UPDATE, so the
 * create waits in its last step (the key's referential check); returns its locks then and after the statement.
 */
async function createLocks(
  client: Sql,
  observer: Sql,
  statement: ReturnType<typeof createStatement>,
  keyId: string,
): Promise<{ peak: LockRow[]; after: LockRow[] }> {
  const pid = (await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
  await observer.query('BEGIN');
  await observer.query('SELECT 1 FROM api_keys WHERE id = $1 FOR UPDATE', [keyId]);
  await client.query('BEGIN');
  let finished = false;
  const running = client.query(statement).finally(() => (finished = true));
  try {
    const deadline = Date.now() + 10_000;
    for (;;) {
      const { rows } = await observer.query(`SELECT 1 FROM pg_stat_activity WHERE pid = $1 AND wait_event_type = 'Lock'`, [pid]);
      if (rows.length > 0) break;
      if (finished) throw new Error('the create never waited for its key row: it ran no referential check of the key');
      if (Date.now() > deadline) throw new Error('the create did not reach its key check within 10 s');
      await new Promise((r) => setTimeout(r, 5));
    }
    const peak = (await observer.query<LockRow>(LOCKS_SQL, [pid])).rows;
    await observer.query('ROLLBACK');
    const result = await running;
    if (result.rows[0]?.created_at === null || result.rows[0]?.created_at === undefined) throw new Error('the create made no session');
    const after = (await client.query<LockRow>(LOCKS_SQL, [pid])).rows;
    return { peak, after };
  } finally {
    await observer.query('ROLLBACK');
    await running.catch(() => undefined);
    await client.query('ROLLBACK');
  }
}

const describe = (rows: LockRow[]) => rows.map((r) => `${r.relation} ${r.mode}${r.fastpath ? '' : ' (shared lock table)'}`).join('\n');

for (const variant of [
  { name: 'by key id, no Idempotency-Key', byHash: false, idempotent: false },
  { name: 'by secret hash, no Idempotency-Key', byHash: true, idempotent: false },
  { name: 'by key id, with an Idempotency-Key', byHash: false, idempotent: true },
  { name: 'by secret hash, with an Idempotency-Key', byHash: true, idempotent: true },
]) {
  t.test(`a create (${variant.name}) locks at most ${FAST_PATH_SLOTS} relations, all on the fast path`, async (t) => {
    const { db, key, secretHash, rateId } = await fixtures(t);
    const client = await db.pool.connect();
    const observer = await db.pool.connect();
    t.teardown(() => {
      client.release();
      observer.release();
    });
    const request = { model: MODEL, mode: 'speech_to_speech' } as const;
    for (let run = 1; run <= RUNS; run++) {
      const idempotencyKey = variant.idempotent ? `idem-${run}` : undefined;
      const input: CreateSessionInput = {
        key: variant.byHash ? { secretHash } : { keyId: key.keyId, walletId: key.walletId },
        request,
        idempotencyKey,
        traceId: '0'.repeat(32),
        policy: { preauthMinutes: 10, idleTimeoutSeconds: 300, maxSeconds: 3600 },
      };
      const statement = createStatement(
        input,
        newId('vs'),
        { rateId, preauthCents: 1000 },
        idempotencyKey ? requestFingerprint(request) : null,
      );
      const { peak, after } = await createLocks(client, observer, statement, key.keyId);
      const relations = new Set(peak.map((r) => r.relation));
      t.ok(relations.size <= FAST_PATH_SLOTS, `run ${run}: ${relations.size} relations locked at the peak`, {
        diagnostic: relations.size > FAST_PATH_SLOTS,
      });
      const shared = [...peak, ...after].filter((r) => !r.fastpath);
      t.same(shared, [], `run ${run}: no lock in the shared lock table`);
      if (shared.length > 0 || relations.size > FAST_PATH_SLOTS) t.comment(`peak:\n${describe(peak)}\nafter:\n${describe(after)}`);
    }
  });
}
