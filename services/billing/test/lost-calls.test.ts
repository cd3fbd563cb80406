// A call that cannot reattach (a phone stream, WebRTC) ends when the relay holding it is gone by the lease
// rule (docs/billing.md, "Calls whose relay is gone"), and settles once from its last checkpoint.
import t from 'tap';
import { upSince, type Availability } from '../src/availability.js';
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
  renewLease,
  sessionRow,
  startConsumer,
  testConfig,
  waitFor,
  waitSettled,
  walletOf,
  type Harness,
} from './fixtures.js';

const TTL_MS = 1000;
const settings = { RELAY_LEASE_TTL_MS: String(TTL_MS), STORE_PROBE_MS: '200' };
const step = (ms: number) => ({ audio_in_ms: ms, audio_out_ms: ms, input_audio_tokens: 0, output_audio_tokens: 0 });

function sweeper(h: Harness, store: Availability = upSince(new Date(0))) {
  const s = createSweeper({ db: h.db, bus: h.bus, config: testConfig(h, settings), logger: h.logger, store });
  h.defer(() => s.stop());
  return s;
}

/** A session whose one attachment of `transport` on `relayId` folded 2 s each way, not final. */
async function call(h: Harness, transport: string, relayId: string) {
  const owner = await createOwner(h.db);
  const s = await createTestSession(h.db, owner);
  const a = await attach(h.db, s.id, relayId);
  await h.db.pool.query(`UPDATE session_attachments SET transport = $2 WHERE id = $1`, [a, transport]);
  await publish(h.bus, history(s.id, a, [step(1000), step(1000)], false));
  await waitFor('folded', async () => (await count(h.db, `SELECT seq FROM session_attachments WHERE id = $1`, [a])) === 2);
  return { owner, session: s, attachmentId: a };
}

t.test('phone and WebRTC calls on a gone relay end relay_lost and settle from their last checkpoint, once', async (t) => {
  const h = await harness(t);
  await startConsumer(h, testConfig(h, settings), { store: upSince(new Date(0)) });
  await renewLease(h, 'relay-dead', -1);
  await renewLease(h, 'relay-live', 60_000);
  const calls = await Promise.all(['twilio', 'telnyx', 'webrtc'].map((transport) => call(h, transport, 'relay-dead')));
  const socket = await call(h, 'websocket', 'relay-dead');
  const live = await call(h, 'twilio', 'relay-live');

  const sw = sweeper(h);
  t.equal((await sw.sweepOnce()).lost, 3, 'the three calls on the dead relay are ended');
  for (const c of calls) {
    // 4000 ms * 0.1 = 400 mc + 500 fee = 900 mc -> 1 cent.
    t.match(await waitSettled(h.db, c.session.id), { status: 'failed', end_cause: 'relay_lost', billed_cents: 1 });
    t.same(await walletOf(h.db, c.owner.walletId), { balance: 9999, reserved: 0, charges: 1 });
  }
  t.match(await sessionRow(h.db, socket.session.id), { end_cause: null, settled_at: null }, 'a WebSocket client may attach again');
  t.match(await sessionRow(h.db, live.session.id), { end_cause: null, settled_at: null }, 'a call on a live relay goes on');
  t.equal((await sw.sweepOnce()).lost, 0, 'nothing twice');
  await assertLedger(t, h.db);
});

t.test('a missing lease (a clean exit) counts once the attachment is older than a TTL', async (t) => {
  const h = await harness(t);
  await startConsumer(h, testConfig(h, settings), { store: upSince(new Date(0)) });
  const c = await call(h, 'twilio', 'relay-never-leased');
  const sw = sweeper(h);
  t.equal((await sw.sweepOnce()).lost, 0, 'a fresh attachment: its relay may not have renewed yet');
  await h.db.pool.query(`UPDATE session_attachments SET started_at = now() - interval '2 seconds' WHERE id = $1`, [c.attachmentId]);
  t.equal((await sw.sweepOnce()).lost, 1);
  t.match(await waitSettled(h.db, c.session.id), { status: 'failed', end_cause: 'relay_lost', billed_cents: 1 });
  await assertLedger(t, h.db);
});

t.test('an expired lease is not a gone relay until the store has been up a whole TTL', async (t) => {
  const h = await harness(t);
  await startConsumer(h, testConfig(h, settings), { store: upSince(new Date(0)) });
  await renewLease(h, 'relay-lapsed', -1);
  const c = await call(h, 'webrtc', 'relay-lapsed');
  t.equal((await sweeper(h, upSince(new Date())).sweepOnce()).lost, 0, 'the store just came back: the lease may have lapsed in the outage');
  t.equal((await sweeper(h, { upSince: () => undefined, stop: () => undefined }).sweepOnce()).lost, 0, 'the store is down');
  t.match(await sessionRow(h.db, c.session.id), { end_cause: null });
  t.equal((await sweeper(h).sweepOnce()).lost, 1, 'up for a TTL: gone');
});

t.test('a session that moved on to a newer attachment is not ended for its old one', async (t) => {
  const h = await harness(t);
  await startConsumer(h, testConfig(h, settings), { store: upSince(new Date(0)) });
  await renewLease(h, 'relay-dead', -1);
  await renewLease(h, 'relay-live', 60_000);
  const c = await call(h, 'twilio', 'relay-dead');
  const sw = sweeper(h);
  // A WebSocket client took the session over on a live relay: the dead relay's phone stream is history.
  const newer = await attach(h.db, c.session.id, 'relay-live');
  await h.db.pool.query(`UPDATE session_attachments SET started_at = now() + interval '1 second' WHERE id = $1`, [newer]);
  t.equal((await sw.sweepOnce()).lost, 0);
  t.match(await sessionRow(h.db, c.session.id), { end_cause: null });
});
