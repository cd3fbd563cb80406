// Real billing processes (services/billing/src/main.ts) killed between the database commit and the ack.
import t from 'tap';
import { subscribeMessages } from '@s2s/bus';
import type { BusMessage } from '@s2s/contract';
import { requestEnd } from '@s2s/sessions';
import {
  assertLedger,
  attach,
  count,
  createOwner,
  createTestSession,
  harness,
  history,
  publish,
  spawnBilling,
  waitFor,
  waitSettled,
  walletOf,
  type Harness,
  type Owner,
} from './fixtures.js';

const step = (audio_in_ms: number, audio_out_ms: number) => ({
  audio_in_ms,
  audio_out_ms,
  input_audio_tokens: 10,
  output_audio_tokens: 20,
});

/**
 * A session whose one attachment sends `n` checkpoints of 1 s in + 1 s out and 10 / 20 tokens each.
 * n = 10: 20 000 ms * 0.1 = 2000 mc + 10 * 100 + 20 * 200 + 500 = 7500 mc -> 8 cents.
 */
async function sessionWithUsage(h: Harness, owner: Owner, n = 10) {
  const s = await createTestSession(h.db, owner);
  const a = await attach(h.db, s.id);
  return {
    id: s.id,
    cps: history(
      s.id,
      a,
      Array.from({ length: n }, () => step(1000, 1000)),
    ),
  };
}
const CENTS = 8;

t.test('killed right after the settlement commit: restarted, it re-announces and never charges twice', async (t) => {
  const h = await harness(t);
  const owner = await createOwner(h.db);
  const s = await sessionWithUsage(h, owner);
  const settledSeen: BusMessage[] = [];
  const sub = subscribeMessages(h.bus.nc, h.bus.subjects.settled(s.id), (m) => settledSeen.push(m));
  h.defer(() => sub.unsubscribe());

  await publish(h.bus, s.cps);
  await requestEnd({ ctx: { db: h.db, bus: h.bus }, input: { sessionId: s.id, cause: 'client_closed' } });
  const first = spawnBilling(h, {}, 'exit_after_settle');
  t.equal(await first.exited, 137, 'the process died after committing');
  t.match(await waitSettled(h.db, s.id), { billed_cents: CENTS }, 'the commit is durable');
  t.equal(settledSeen.length, 0, 'it died before announcing the settlement');
  const info = await h.bus.jsm.consumers.info(h.bus.subjects.stream, 'billing');
  t.ok(info.num_ack_pending > 0, 'and before acking');

  spawnBilling(h, { ACK_WAIT_MS: '1000' });
  await waitFor('settlement re-announced', async () => settledSeen.length > 0, 30_000);
  t.match(settledSeen[0], { type: 'session.settled', session_id: s.id, status: 'completed', billed_cents: CENTS });
  await waitFor('everything acknowledged', async () => {
    const i = await h.bus.jsm.consumers.info(h.bus.subjects.stream, 'billing');
    return i.num_ack_pending === 0 && i.num_pending === 0;
  });
  t.same(await walletOf(h.db, owner.walletId), { balance: 10_000 - CENTS, reserved: 0, charges: 1 });
  t.equal(await count(h.db, `SELECT count(*) FROM settlements`), 1);
  await assertLedger(t, h.db);
});

t.test('killed right after a fold commit: the redelivered checkpoints are not counted twice', async (t) => {
  const h = await harness(t);
  const owner = await createOwner(h.db);
  const s = await sessionWithUsage(h, owner);
  await publish(h.bus, s.cps);
  const first = spawnBilling(h, {}, 'exit_after_commit');
  t.equal(await first.exited, 137);
  t.ok((await count(h.db, `SELECT seq FROM session_attachments`)) >= 1, 'a fold was committed');
  const info = await h.bus.jsm.consumers.info(h.bus.subjects.stream, 'billing');
  t.equal(info.ack_floor.stream_seq, 0, 'and nothing was acknowledged');

  spawnBilling(h, { ACK_WAIT_MS: '1000' });
  await requestEnd({ ctx: { db: h.db, bus: h.bus }, input: { sessionId: s.id, cause: 'client_closed' } });
  t.match(await waitSettled(h.db, s.id, 30_000), {
    billed_cents: CENTS,
    audio_in_ms: 10_000,
    audio_out_ms: 10_000,
    input_audio_tokens: 100,
  });
  t.same(await walletOf(h.db, owner.walletId), { balance: 10_000 - CENTS, reserved: 0, charges: 1 });
  await assertLedger(t, h.db);
});

t.test('SIGKILL in the middle of a stream, restarted, and two processes at once: every session exactly once', async (t) => {
  const h = await harness(t);
  const owner = await createOwner(h.db, 100_000);
  const sessions = [];
  for (let i = 0; i < 20; i++) sessions.push(await sessionWithUsage(h, owner, 50));
  const env = { BATCH_SIZE: '25', ACK_WAIT_MS: '1000' };
  const victim = spawnBilling(h, env);
  // Publish while it consumes; end every session as its last checkpoint goes out (the relay's order).
  for (const s of sessions) {
    await publish(h.bus, s.cps);
    await requestEnd({ ctx: { db: h.db, bus: h.bus }, input: { sessionId: s.id, cause: 'client_closed' } });
  }
  await waitFor(
    'some settled',
    async () => (await count(h.db, `SELECT count(*) FROM voice_sessions WHERE settled_at IS NOT NULL`)) >= 3,
    30_000,
  );
  victim.kill('SIGKILL');
  await victim.exited;

  spawnBilling(h, env);
  spawnBilling(h, env);
  // 50 checkpoints: 100 000 ms * 0.1 = 10 000 mc + 10 * 500 + 20 * 1000 + 500 = 35 500 mc -> 36 cents each.
  // One deadline for all: the two processes' start (tsx compiling) takes most of it on a loaded machine.
  const deadline = Date.now() + 120_000;
  for (const s of sessions) {
    const settled = await waitSettled(h.db, s.id, Math.max(1_000, deadline - Date.now()));
    t.match(settled, { billed_cents: 36, audio_in_ms: 50_000 }, s.id);
  }
  t.same(await walletOf(h.db, owner.walletId), { balance: 100_000 - 20 * 36, reserved: 0, charges: 20 });
  await assertLedger(t, h.db);
});

t.test('a replica frozen past its ack wait and thawed after another one took over changes nothing', async (t) => {
  const h = await harness(t);
  const owner = await createOwner(h.db);
  const sessions = [await sessionWithUsage(h, owner), await sessionWithUsage(h, owner)];
  const env = { ACK_WAIT_MS: '2000', END_GRACE_MS: '200' };
  const frozen = spawnBilling(h, env);
  await waitFor(
    'consumer created',
    async () => {
      const i = await h.bus.jsm.consumers.info(h.bus.subjects.stream, 'billing').catch(() => undefined);
      return i !== undefined && i.num_waiting > 0;
    },
    30_000,
  );
  frozen.kill('SIGSTOP');
  for (const s of sessions) {
    await publish(h.bus, s.cps);
    await requestEnd({ ctx: { db: h.db, bus: h.bus }, input: { sessionId: s.id, cause: 'client_closed' } });
  }
  const other = spawnBilling(h, env);
  for (const s of sessions) t.match(await waitSettled(h.db, s.id, 30_000), { billed_cents: CENTS });
  frozen.kill('SIGCONT');
  // Let the thawed process work through whatever it had been handed before it froze.
  await new Promise((r) => setTimeout(r, 1500));
  other.kill('SIGTERM');
  t.equal(await other.exited, 0, 'drains and exits cleanly on SIGTERM');
  t.same(await walletOf(h.db, owner.walletId), { balance: 10_000 - 2 * CENTS, reserved: 0, charges: 2 });
  await assertLedger(t, h.db);
});
