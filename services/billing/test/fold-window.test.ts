// A real billing process (services/billing/src/main.ts) killed while checkpoints wait in its fold window.
import t from 'tap';
import { requestEnd } from '@s2s/sessions';
import {
  assertLedger,
  attach,
  createOwner,
  createTestSession,
  harness,
  history,
  publish,
  spawnBilling,
  waitFor,
  waitSettled,
  walletOf,
} from './fixtures.js';

// Ten checkpoints of 1 s in + 1 s out and 10 / 20 tokens each, the last one final:
// 20 000 ms * 0.1 = 2000 mc + 100 * 10 + 200 * 20 + 500 = 7500 mc -> 8 cents.
const CENTS = 8;

t.test('killed while checkpoints wait in the fold window: redelivered and folded once; a final is folded at once', async (t) => {
  const h = await harness(t);
  const owner = await createOwner(h.db);
  const session = await createTestSession(h.db, owner);
  const s = {
    id: session.id,
    cps: history(
      session.id,
      await attach(h.db, session.id),
      Array.from({ length: 10 }, () => ({ audio_in_ms: 1000, audio_out_ms: 1000, input_audio_tokens: 10, output_audio_tokens: 20 })),
    ),
  };
  const waiting = s.cps.slice(0, 9);
  const final = s.cps[9];
  t.ok(final?.final && waiting.every((c) => !c.final));
  // A 3 s window (a quarter of the ack wait): the first nine wait in it, delivered and unacknowledged.
  const env = { FOLD_WINDOW_MS: '5000', ACK_WAIT_MS: '12000' };
  const victim = spawnBilling(h, env);
  await publish(h.bus, waiting);
  await waitFor(
    'the window holding all nine',
    async () => {
      const i = await h.bus.jsm.consumers.info(h.bus.subjects.stream, 'billing').catch(() => undefined);
      return i !== undefined && i.num_ack_pending === waiting.length;
    },
    30_000,
  );
  const info = await h.bus.jsm.consumers.info(h.bus.subjects.stream, 'billing');
  t.equal(info.ack_floor.stream_seq, 0, 'nothing acknowledged before the window closes');
  victim.kill('SIGKILL');
  t.equal(await victim.exited, 137);

  // The restarted process gets the nine back after the ack wait (the final would carry their counters: the
  // nine must be stored on their own first).
  spawnBilling(h, env);
  t.same(
    await waitFor(
      'the nine stored after their redelivery',
      async () => (await h.db.pool.query(`SELECT seq, audio_in_ms::int AS a, final FROM session_attachments WHERE seq > 0`)).rows[0],
      60_000,
    ),
    { seq: 9, a: 9000, final: false },
  );
  // Then the final, which starts its batch at once, and the settlement: every checkpoint exactly once.
  await requestEnd({ ctx: { db: h.db, bus: h.bus }, input: { sessionId: s.id, cause: 'client_closed' } });
  await publish(h.bus, [final as (typeof s.cps)[number]]);
  t.match(await waitSettled(h.db, s.id, 60_000), {
    billed_cents: CENTS,
    audio_in_ms: 10_000,
    audio_out_ms: 10_000,
    input_audio_tokens: 100,
  });
  await waitFor(
    'everything acknowledged',
    async () => {
      const i = await h.bus.jsm.consumers.info(h.bus.subjects.stream, 'billing');
      return i.num_ack_pending === 0 && i.num_pending === 0;
    },
    60_000,
  );
  t.same(await walletOf(h.db, owner.walletId), { balance: 10_000 - CENTS, reserved: 0, charges: 1 });
  await assertLedger(t, h.db);
});
