// The database side of part (b)'s critical path, without NATS: an ended session's final checkpoint is stored
// (storeCheckpoints, which finds it ready) and the session settled (settleSession), as the checkpoint handler
// does. Per session: wall ms of the two, and the round trips to PostgreSQL (queries on the connections,
// BEGIN and COMMIT included). BENCH_BASE_DIR=<another checkout> runs its usage-store.ts and settle.ts on
// the same database, in alternated groups (A B B A ...), so the two compare within one run.
//   NODE_OPTIONS=--conditions=@s2s/source npx tsx bench/billing/settle-path.ts [sessions per group=100] [groups=8]
import { loadavg } from 'node:os';
import { pathToFileURL } from 'node:url';
import type { UsageCheckpoint } from '@s2s/contract';
import { createTestDatabase, checkLedgerInvariants } from '@s2s/db/testing';
import { settleSession, storeCheckpoints } from '@s2s/billing/bench';
import { attach, checkpoint, createOwner, createTestSession } from '@s2s/sessions/testing';

const PER_GROUP = Number(process.argv[2] ?? 100);
const GROUPS = Number(process.argv[3] ?? 8);

type Store = typeof storeCheckpoints;
type Settle = typeof settleSession;
const builds: [string, Store, Settle][] = [['this build', storeCheckpoints, settleSession]];
const baseDir = process.env.BENCH_BASE_DIR;
if (baseDir) {
  const src = `${baseDir}/services/billing/src`;
  const store = (await import(pathToFileURL(`${src}/usage-store.ts`).href)) as { storeCheckpoints: Store };
  const settle = (await import(pathToFileURL(`${src}/settle.ts`).href)) as { settleSession: Settle };
  builds.unshift(['base', store.storeCheckpoints, settle.settleSession]);
}

const testDb = await createTestDatabase();
const db = testDb.db;
// Every query of the path goes through a client checked out of this pool, or the pool itself.
let queries = 0;
const pool = db.pool as unknown as { connect: (...a: unknown[]) => unknown; query: (...a: unknown[]) => unknown };
const connect = pool.connect.bind(pool);
const counting = <T extends { query: (...a: unknown[]) => unknown }>(client: T): T => {
  const query = client.query;
  if (!(query as { counted?: boolean }).counted) {
    const counted = function (this: unknown, ...a: unknown[]) {
      queries++;
      return query.apply(this, a);
    };
    client.query = Object.assign(counted, { counted: true });
  }
  return client;
};
// pool.query checks a client out with a callback (and is counted there); withTransaction awaits connect().
pool.connect = (...a: unknown[]) => {
  if (typeof a[0] === 'function') {
    const cb = a[0] as (err: unknown, client: { query: (...q: unknown[]) => unknown }, done: unknown) => void;
    return connect((err: unknown, client: { query: (...q: unknown[]) => unknown }, done: unknown) =>
      cb(err, client && counting(client), done),
    );
  }
  return (connect() as Promise<{ query: (...q: unknown[]) => unknown }>).then(counting);
};

const owner = await createOwner(db, 1_000_000_000);
await db.pool.query('UPDATE api_keys SET max_live_sessions = $2, max_creates_per_minute = $2 WHERE id = $1', [
  owner.key.keyId,
  2_147_483_647,
]);

/** A session with two attachments, each with a stored checkpoint, its end requested; the final one of the second to come. */
async function endedSession(): Promise<UsageCheckpoint> {
  const s = await createTestSession(db, owner);
  const a1 = await attach(db, s.id);
  const a2 = await attach(db, s.id, 'relay-2');
  await storeCheckpoints({
    ctx: { db },
    input: { newest: [checkpoint(s.id, a1, 1, { audio_in_ms: 1000 }, true), checkpoint(s.id, a2, 1, { audio_in_ms: 500 }, false)] },
  });
  await db.pool.query(
    `UPDATE voice_sessions SET end_requested_at = now(), end_cause = 'client_closed', terminal_status = 'completed' WHERE id = $1`,
    [s.id],
  );
  return checkpoint(s.id, a2, 2, { audio_in_ms: 900, output_audio_tokens: 40 }, true);
}

const percentile = (xs: number[], p: number) =>
  [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.ceil((p / 100) * xs.length) - 1)] ?? NaN;
const ms = new Map<string, number[]>(builds.map(([l]) => [l, []]));
const trips = new Map<string, number[]>(builds.map(([l]) => [l, []]));
for (let g = 1; g <= GROUPS; g++) {
  for (const [label, store, settle] of g % 2 === 1 ? builds : [...builds].reverse()) {
    const finals: UsageCheckpoint[] = [];
    for (let i = 0; i < PER_GROUP; i++) finals.push(await endedSession());
    for (const c of finals) {
      queries = 0;
      const t0 = performance.now();
      const { readyToSettle } = await store({ ctx: { db }, input: { newest: [c] } });
      if (readyToSettle.length !== 1) throw new Error(`${label}: the final checkpoint left the session not ready`);
      const r = await settle({ ctx: { db }, input: { sessionId: c.session_id } });
      if (r.outcome !== 'settled') throw new Error(`${label}: ${r.outcome}`);
      ms.get(label)!.push(performance.now() - t0);
      trips.get(label)!.push(queries);
    }
  }
}
const violations = (await checkLedgerInvariants(db.pool)).length;
const fmt = (n: number) => n.toFixed(2);
for (const [label] of builds) {
  const xs = ms.get(label)!;
  const rt = trips.get(label)!;
  console.log(
    `${label}: final checkpoint stored + session settled, ${xs.length} sessions: p50 ${fmt(percentile(xs, 50))} ms, p99 ${fmt(percentile(xs, 99))} ms, ` +
      `mean ${fmt(xs.reduce((a, b) => a + b, 0) / xs.length)} ms; round trips ${Math.min(...rt)}-${Math.max(...rt)}`,
  );
}
console.log(`ledger invariant violations: ${violations}; load ${loadavg()[0]!.toFixed(1)}`);
await testDb.drop();
process.exit(0);
