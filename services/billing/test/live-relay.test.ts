// Issue 8 item 1: a session is not settled while a live relay still holds usage for one of its attachments.
import t from 'tap';
import { requestEnd } from '@s2s/sessions';
import { upSince } from '../src/availability.js';
import type { Harness } from './fixtures.js';
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
} from './fixtures.js';

const step = (ms: number) => ({ audio_in_ms: ms, audio_out_ms: ms, input_audio_tokens: 0, output_audio_tokens: 0 });
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A relay process alive for the test: renews its lease every 200 ms with a 1 s TTL until stopped. */
function liveRelay(h: Harness, relayId: string) {
  let alive = true;
  const loop = (async () => {
    while (alive) {
      await renewLease(h, relayId, 1000);
      await sleep(200);
    }
  })();
  h.defer(async () => {
    alive = false;
    await loop;
  });
  return {
    async die() {
      alive = false;
      await loop;
    },
  };
}

/** A session whose one attachment on `relayId` folded 2 checkpoints of 1 s in + 1 s out, not final. */
async function sessionInFlight(h: Harness, relayId: string) {
  const owner = await createOwner(h.db);
  const s = await createTestSession(h.db, owner);
  const a = await attach(h.db, s.id, relayId);
  // 4 steps of 1 s each way: 8000 ms * 0.1 = 800 mc + 500 fee = 1300 mc -> 2 cents when all are billed.
  const cps = history(s.id, a, [step(1000), step(1000), step(1000), step(1000)]).map((c) => ({ ...c, relay_id: relayId }));
  await publish(h.bus, cps.slice(0, 2));
  await waitFor('first checkpoints folded', async () => (await count(h.db, `SELECT max(seq) FROM session_attachments`)) === 2);
  return { owner, id: s.id, cps };
}

const settings = { END_GRACE_MS: '300', RELAY_LEASE_TTL_MS: '1000', STORE_PROBE_MS: '100', MAX_DELIVER: '10' };

t.test("a live relay's final checkpoint is waited for past the grace and billed in full", async (t) => {
  const h = await harness(t);
  liveRelay(h, 'relay-live');
  const { consumer } = await startConsumer(h, testConfig(h, settings), { store: upSince(new Date(0)) });
  const s = await sessionInFlight(h, 'relay-live');
  const end = await requestEnd({ ctx: { db: h.db, bus: h.bus }, input: { sessionId: s.id, cause: 'client_closed' } });
  // The relay is slow to publish (NATS was away from it, say): 5 graces pass before its final arrives.
  await sleep(1500);
  t.equal((await sessionRow(h.db, s.id)).settled_at, null, 'not settled while the live relay holds usage');
  await publish(h.bus, s.cps.slice(2));
  const row = await waitSettled(h.db, s.id);
  t.ok(row.settled_at!.getTime() - end!.requestedAt.getTime() >= 1500, 'settled after the final, not on the grace');
  t.match(row, { status: 'completed', billed_cents: 2, audio_in_ms: 4000, audio_out_ms: 4000 });
  t.equal(consumer.stats.lateCheckpoints, 0, 'nothing arrived after settlement');
  t.equal(consumer.stats.settledOnLiveBound, 0);
  await assertLedger(t, h.db);
});

t.test('a relay whose lease expired while the store was up is gone: the grace applies', async (t) => {
  const h = await harness(t);
  await renewLease(h, 'relay-dead', -60_000);
  await startConsumer(h, testConfig(h, settings), { store: upSince(new Date(0)) });
  const s = await sessionInFlight(h, 'relay-dead');
  const end = await requestEnd({ ctx: { db: h.db, bus: h.bus }, input: { sessionId: s.id, cause: 'client_closed' } });
  const row = await waitSettled(h.db, s.id);
  t.ok(row.settled_at!.getTime() - end!.requestedAt.getTime() < 5000, 'settled on the grace');
  // 2 checkpoints: 4000 ms * 0.1 = 400 mc + 500 = 900 mc -> 1 cent.
  t.match(row, { status: 'completed', billed_cents: 1, audio_in_ms: 2000 });
  await assertLedger(t, h.db);
});

t.test('a lease that lapsed in a store outage billing saw is not taken for a dead relay', async (t) => {
  const h = await harness(t);
  // The store has just come back: the relay's lease lapsed while nobody could renew it.
  await renewLease(h, 'relay-back', -5000);
  let storeBack = new Date();
  const { consumer } = await startConsumer(h, testConfig(h, settings), { store: { upSince: () => storeBack, stop: () => undefined } });
  const s = await sessionInFlight(h, 'relay-back');
  storeBack = new Date();
  await requestEnd({ ctx: { db: h.db, bus: h.bus }, input: { sessionId: s.id, cause: 'client_closed' } });
  await sleep(700);
  t.equal((await sessionRow(h.db, s.id)).settled_at, null, 'less than a TTL of store uptime: still waiting');
  // The relay was alive all along: it renews, then publishes its final.
  liveRelay(h, 'relay-back');
  await sleep(500);
  await publish(h.bus, s.cps.slice(2));
  t.match(await waitSettled(h.db, s.id), { billed_cents: 2, audio_in_ms: 4000, audio_out_ms: 4000 });
  t.equal(consumer.stats.settledOnLiveBound, 0);
  await assertLedger(t, h.db);
});

t.test('a live relay that never sends its final is waited for up to the bound, then the session settles', async (t) => {
  const h = await harness(t);
  liveRelay(h, 'relay-stuck');
  const { consumer } = await startConsumer(h, testConfig(h, { ...settings, END_LIVE_RELAY_MAX_WAIT_MS: '1500' }), {
    store: upSince(new Date(0)),
  });
  const s = await sessionInFlight(h, 'relay-stuck');
  const end = await requestEnd({ ctx: { db: h.db, bus: h.bus }, input: { sessionId: s.id, cause: 'client_closed' } });
  const row = await waitSettled(h.db, s.id);
  t.ok(row.settled_at!.getTime() - end!.requestedAt.getTime() >= 1500, 'not before the bound');
  t.match(row, { billed_cents: 1, audio_in_ms: 2000 });
  t.equal(consumer.stats.settledOnLiveBound, 1, 'counted and logged');
  await assertLedger(t, h.db);
});

t.test('a relay that dies during the wait is noticed by its lease: the session settles without waiting out the bound', async (t) => {
  const h = await harness(t);
  const relay = liveRelay(h, 'relay-dies');
  await startConsumer(h, testConfig(h, { ...settings, END_LIVE_RELAY_MAX_WAIT_MS: '60000' }), { store: upSince(new Date(0)) });
  const s = await sessionInFlight(h, 'relay-dies');
  const end = await requestEnd({ ctx: { db: h.db, bus: h.bus }, input: { sessionId: s.id, cause: 'client_closed' } });
  await sleep(500);
  await relay.die();
  const row = await waitSettled(h.db, s.id);
  t.ok(row.settled_at!.getTime() - end!.requestedAt.getTime() < 20_000, 'long before the 60 s bound');
  t.match(row, { billed_cents: 1, audio_in_ms: 2000 });
  await assertLedger(t, h.db);
});

t.test('a session still ready at its end whose attachment shows accepted input settles completed, not cancelled', async (t) => {
  const h = await harness(t);
  await startConsumer(h, testConfig(h, settings));
  const owner = await createOwner(h.db);
  const s = await createTestSession(h.db, owner);
  // The relay's ready -> active update was lost (store down at the first input); its usage was not.
  await h.db.pool.query(`INSERT INTO session_attachments (id, session_id, relay_id) VALUES ('att_lost', $1, 'relay-x')`, [s.id]);
  const end = await requestEnd({ ctx: { db: h.db, bus: h.bus }, input: { sessionId: s.id, cause: 'client_closed' } });
  t.equal(end?.terminalStatus, 'cancelled', 'recorded while still ready');
  await publish(h.bus, history(s.id, 'att_lost', [step(3600)]));
  // 7200 ms * 0.1 = 720 mc + 500 = 1220 mc -> 2 cents.
  const row = await waitSettled(h.db, s.id);
  t.match(row, { status: 'completed', billed_cents: 2, audio_in_ms: 3600, audio_out_ms: 3600 });
  t.equal(await count(h.db, `SELECT count(*) FROM settlements WHERE status = 'completed'`), 1);
  await assertLedger(t, h.db);
});
