import t from 'tap';
import { requestEnd } from '@s2s/sessions';
import { createSweeper } from '../src/sweeper.js';
import {
  assertLedger,
  attach,
  count,
  createOwner,
  createTestSession,
  harness,
  history,
  publish,
  sessionRow,
  startConsumer,
  testConfig,
  waitFor,
  waitSettled,
  walletOf,
  type Harness,
} from './fixtures.js';

function sweeper(h: Harness, overrides: Record<string, string> = {}) {
  const s = createSweeper({ db: h.db, bus: h.bus, config: testConfig(h, overrides), logger: h.logger });
  h.defer(() => s.stop());
  return s;
}

const minute = { audio_in_ms: 30_000, audio_out_ms: 30_000, input_audio_tokens: 0, output_audio_tokens: 0 };

t.test('an idle session is expired by the running sweeper and settled on its usage', async (t) => {
  const h = await harness(t);
  await startConsumer(h, testConfig(h));
  const owner = await createOwner(h.db);
  const s = await createTestSession(h.db, owner, { idleTimeoutSeconds: 1 });
  const a = await attach(h.db, s.id);
  await publish(h.bus, history(s.id, a, [minute], false));
  await waitFor('folded', async () => (await count(h.db, `SELECT max(seq) FROM session_attachments`)) === 1);
  await h.db.pool.query(`UPDATE voice_sessions SET last_activity_at = now() - interval '2 seconds' WHERE id = $1`, [s.id]);
  sweeper(h).start();
  const row = await waitSettled(h.db, s.id);
  // 60 000 ms * 0.1 = 6000 + 500 = 6500 mc -> 7 cents.
  t.match(row, { status: 'expired', end_cause: 'idle_timeout', billed_cents: 7 });
  t.same(await walletOf(h.db, owner.walletId), { balance: 9993, reserved: 0, charges: 1 });
  await assertLedger(t, h.db);
});

t.test("audio in folded checkpoints is activity: the sweeper and requestEnd's re-check see it", async (t) => {
  const h = await harness(t);
  await startConsumer(h, testConfig(h));
  const owner = await createOwner(h.db);
  const s = await createTestSession(h.db, owner, { idleTimeoutSeconds: 30 });
  const a = await attach(h.db, s.id);
  await publish(h.bus, history(s.id, a, [minute], false));
  await waitFor('folded', async () => (await count(h.db, `SELECT max(seq) FROM session_attachments`)) === 1);
  // The session row alone says idle for an hour; its attachment showed audio just now.
  await h.db.pool.query(`UPDATE voice_sessions SET last_activity_at = now() - interval '1 hour' WHERE id = $1`, [s.id]);
  const sw = sweeper(h);
  t.equal((await sw.sweepOnce()).expired, 0, 'not expired by the sweeper');
  const end = await requestEnd({ ctx: { db: h.db, bus: h.bus }, input: { sessionId: s.id, cause: 'idle_timeout' } });
  t.equal(end, null, 'an idle_timeout end is refused under the lock');
  t.match(await sessionRow(h.db, s.id), { end_cause: null, settled_at: null });
  await h.db.pool.query(`UPDATE session_attachments SET last_audio_at = now() - interval '31 seconds' WHERE id = $1`, [a]);
  t.equal((await sw.sweepOnce()).expired, 1, 'expired once its audio too is older than the timeout');
  t.match(await waitSettled(h.db, s.id), { status: 'expired', end_cause: 'idle_timeout' });
  await assertLedger(t, h.db);
});

t.test('a session past its maximum length expires even while active', async (t) => {
  const h = await harness(t);
  await startConsumer(h, testConfig(h));
  const owner = await createOwner(h.db);
  const s = await createTestSession(h.db, owner, { maxSeconds: 1 });
  const live = await createTestSession(h.db, owner);
  await attach(h.db, s.id);
  await h.db.pool.query(`UPDATE voice_sessions SET max_ends_at = now() - interval '1 second', last_activity_at = now() WHERE id = $1`, [
    s.id,
  ]);
  const result = await sweeper(h).sweepOnce();
  t.equal(result.expired, 1);
  t.match(await waitSettled(h.db, s.id), { status: 'expired', end_cause: 'max_duration', billed_cents: 0 });
  t.match(await sessionRow(h.db, live.id), { status: 'ready', settled_at: null, end_cause: null }, 'a live session is left alone');
  await assertLedger(t, h.db);
});

t.test('an end recorded but never announced (publish lost) is re-announced and settled', async (t) => {
  const h = await harness(t);
  await startConsumer(h, testConfig(h));
  const owner = await createOwner(h.db);
  const s = await createTestSession(h.db, owner);
  // What requestEnd leaves behind when the process dies between its commit and its publish.
  await h.db.pool.query(
    `UPDATE voice_sessions SET end_requested_at = now() - interval '5 seconds', end_cause = 'error', terminal_status = 'failed' WHERE id = $1`,
    [s.id],
  );
  const sw = sweeper(h);
  t.equal((await sw.sweepOnce()).reannounced, 1);
  t.match(await waitSettled(h.db, s.id), { status: 'failed', end_cause: 'error', billed_cents: 0 });
  t.equal((await sw.sweepOnce()).reannounced, 0, 'settled sessions are not re-announced');
  await assertLedger(t, h.db);
});

t.test('idempotency keys older than 24 hours are purged', async (t) => {
  const h = await harness(t);
  const owner = await createOwner(h.db);
  for (const [k, age] of [
    ['old-1', '25 hours'],
    ['old-2', '48 hours'],
    ['fresh', '23 hours'],
  ] as const) {
    await h.db.pool.query(
      `INSERT INTO idempotency_keys (key_id, idempotency_key, fingerprint, session_id, created_at)
       VALUES ($1, $2, 'f', 'vs_x', now() - $3::interval)`,
      [owner.key.keyId, k, age],
    );
  }
  t.equal((await sweeper(h).sweepOnce()).idempotencyKeysDeleted, 2);
  t.equal(await count(h.db, `SELECT count(*) FROM idempotency_keys WHERE idempotency_key = 'fresh'`), 1);
  await assertLedger(t, h.db);
});

t.test('concurrent end requests for one session: the first cause wins, one announcement, one settlement', async (t) => {
  const h = await harness(t);
  const { consumer } = await startConsumer(h, testConfig(h));
  const owner = await createOwner(h.db);
  const s = await createTestSession(h.db, owner);
  const a = await attach(h.db, s.id);
  await publish(h.bus, history(s.id, a, [minute]));
  await waitFor('final folded', async () => (await count(h.db, `SELECT count(*) FROM session_attachments WHERE final`)) === 1);
  const causes = ['client_closed', 'error', 'timeout', 'client_closed', 'error', 'timeout', 'client_closed', 'error'] as const;
  const ends = await Promise.all(causes.map((c) => requestEnd({ ctx: { db: h.db, bus: h.bus }, input: { sessionId: s.id, cause: c } })));
  const winners = ends.filter((e) => e?.first);
  t.equal(winners.length, 1, 'exactly one request recorded the end');
  const winner = winners[0]!;
  for (const e of ends) t.match(e, { cause: winner.cause, terminalStatus: winner.terminalStatus }, 'every caller sees the winning cause');
  const row = await waitSettled(h.db, s.id);
  t.match(row, { status: winner.terminalStatus, end_cause: winner.cause, billed_cents: 7 });
  const stream = await h.bus.jsm.streams.info(h.bus.subjects.stream, { subjects_filter: h.bus.subjects.endRequested(s.id) });
  t.equal(stream.state.subjects?.[h.bus.subjects.endRequested(s.id)], 1, 'the repeats were duplicates on the bus');
  t.equal(consumer.stats.settled, 1);
  t.same(await walletOf(h.db, owner.walletId), { balance: 9993, reserved: 0, charges: 1 });
  await assertLedger(t, h.db);
});

t.test('an end request racing expiry: one cause is recorded and settled once, under any interleaving', async (t) => {
  const h = await harness(t);
  await startConsumer(h, testConfig(h));
  const owner = await createOwner(h.db, 100_000);
  const sessions = [];
  for (let i = 0; i < 10; i++) {
    const s = await createTestSession(h.db, owner, { idleTimeoutSeconds: 1 });
    const a = await attach(h.db, s.id);
    await publish(h.bus, history(s.id, a, [minute]));
    sessions.push(s);
  }
  await waitFor('finals folded', async () => (await count(h.db, `SELECT count(*) FROM session_attachments WHERE final`)) === 10);
  await h.db.pool.query(`UPDATE voice_sessions SET last_activity_at = now() - interval '2 seconds'`);
  // Two sweeper replicas and a client ending every session, all at once.
  const one = sweeper(h);
  const two = sweeper(h);
  const [r1, r2] = await Promise.all([
    one.sweepOnce(),
    two.sweepOnce(),
    ...sessions.map((s) => requestEnd({ ctx: { db: h.db, bus: h.bus }, input: { sessionId: s.id, cause: 'client_closed' } })),
  ]);
  const byClient = await count(h.db, `SELECT count(*) FROM voice_sessions WHERE end_cause = 'client_closed'`);
  t.equal(r1!.expired + r2!.expired + byClient, 10, 'each session ended by exactly one party');
  for (const s of sessions) {
    const row = await waitSettled(h.db, s.id);
    const expected = row.end_cause === 'client_closed' ? 'completed' : 'expired';
    t.match(row, { status: expected, billed_cents: 7 }, `${row.end_cause} -> ${expected}`);
  }
  t.same(await walletOf(h.db, owner.walletId), { balance: 100_000 - 70, reserved: 0, charges: 10 });
  await assertLedger(t, h.db);
});
