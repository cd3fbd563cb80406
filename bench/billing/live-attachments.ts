// The store benchmarks' data (fold-tx.ts, fold-sql.ts): a fresh test database with N live sessions of one
// owner whose key allows them all, each with one attachment of relay `bench-relay`.
import { createTestDatabase } from '@s2s/db/testing';
import { attach, createOwner, createTestSession } from '@s2s/sessions/testing';

export async function liveAttachments(n: number) {
  const testDb = await createTestDatabase();
  const db = testDb.db;
  const owner = await createOwner(db, 1_000_000_000);
  await db.pool.query('UPDATE api_keys SET max_live_sessions = $2, max_creates_per_minute = $2 WHERE id = $1', [
    owner.key.keyId,
    2_147_483_647,
  ]);
  const live: { id: string; attachmentId: string }[] = [];
  for (let i = 0; i < n; i += 50) {
    const chunk = Array.from({ length: Math.min(50, n - i) }, async () => {
      const s = await createTestSession(db, owner);
      return { id: s.id, attachmentId: await attach(db, s.id, 'bench-relay') };
    });
    live.push(...(await Promise.all(chunk)));
  }
  return { testDb, db, live, ids: live.map((s) => s.id).sort() };
}
