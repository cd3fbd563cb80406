import { createServer, connect, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import t from 'tap';
import { requestEnd } from '@s2s/sessions';
import { ensureBillingConsumer, DURABLE_NAME } from '../src/consumer.js';
import {
  assertLedger,
  attach,
  createOwner,
  createTestSession,
  harness,
  history,
  publish,
  startConsumer,
  testConfig,
  waitFor,
  waitSettled,
  walletOf,
  type Harness,
  type Owner,
} from './fixtures.js';

const step = (audio_in_ms: number, audio_out_ms: number) => ({ audio_in_ms, audio_out_ms, input_audio_tokens: 0, output_audio_tokens: 0 });

/**
 * `n` sessions, each with one attachment sending 5 checkpoints of 6 s in + 6 s out more each, the last
 * one final: 60 000 ms at 0.1 mc/ms = 6000 mc, + 500 fee = 6500 mc -> 7 cents.
 */
async function sessionsWithUsage(h: Harness, owner: Owner, n: number) {
  const out: { id: string; cps: ReturnType<typeof history> }[] = [];
  for (let i = 0; i < n; i++) {
    const s = await createTestSession(h.db, owner);
    const a = await attach(h.db, s.id);
    out.push({
      id: s.id,
      cps: history(
        s.id,
        a,
        Array.from({ length: 5 }, () => step(6000, 6000)),
      ),
    });
  }
  return out;
}
const CENTS_PER_SESSION = 7;

t.test('messages whose ack timed out are redelivered and counted once', async (t) => {
  const h = await harness(t);
  const config = testConfig(h, { ACK_WAIT_MS: '800' });
  await ensureBillingConsumer(h.bus, config);
  const owner = await createOwner(h.db);
  const [s] = await sessionsWithUsage(h, owner, 1);
  if (!s) throw new Error('no session');
  await publish(h.bus, s.cps);
  // A consumer that takes every message and dies before acking any.
  const thief = await h.bus.js.consumers.get(h.bus.subjects.stream, DURABLE_NAME);
  const taken = await thief.fetch({ max_messages: 5, expires: 1000 });
  let stolen = 0;
  for await (const _m of taken) stolen++;
  t.equal(stolen, 5, 'all five checkpoints were delivered to the crashed consumer');

  const { consumer } = await startConsumer(h, config);
  await waitFor('redelivered after the ack wait', async () => consumer.stats.checkpoints >= 5);
  await requestEnd({ ctx: { db: h.db, bus: h.bus }, input: { sessionId: s.id, cause: 'client_closed' } });
  t.match(await waitSettled(h.db, s.id), { billed_cents: CENTS_PER_SESSION, audio_in_ms: 30_000, audio_out_ms: 30_000 });
  t.same(await walletOf(h.db, owner.walletId), { balance: 10_000 - CENTS_PER_SESSION, reserved: 0, charges: 1 });
  await assertLedger(t, h.db);
});

t.test('checkpoints a crashed replica still holds count when the session settles on the grace', async (t) => {
  const h = await harness(t);
  // A long ack wait: the held checkpoints come back only long after the grace has run out.
  const config = testConfig(h, { ACK_WAIT_MS: '60000', END_GRACE_MS: '300' });
  await ensureBillingConsumer(h.bus, config);
  const owner = await createOwner(h.db);
  const s = await createTestSession(h.db, owner);
  const a = await attach(h.db, s.id);
  // The relay died too: no final checkpoint ever comes.
  await publish(
    h.bus,
    history(
      s.id,
      a,
      Array.from({ length: 4 }, () => step(6000, 6000)),
      false,
    ),
  );
  const thief = await h.bus.js.consumers.get(h.bus.subjects.stream, DURABLE_NAME);
  let held = 0;
  for await (const _m of await thief.fetch({ max_messages: 4, expires: 1000 })) held++;
  t.equal(held, 4, 'a replica took every checkpoint and died before acking');

  const { consumer } = await startConsumer(h, config);
  await requestEnd({ ctx: { db: h.db, bus: h.bus }, input: { sessionId: s.id, cause: 'client_closed' } });
  // 48 000 ms * 0.1 = 4800 mc + 500 = 5300 mc -> 6 cents.
  t.match(await waitSettled(h.db, s.id), { status: 'completed', billed_cents: 6, audio_in_ms: 24_000, audio_out_ms: 24_000 });
  t.equal(consumer.stats.recovered, 1, 'read back from the stream before settling');
  t.same(await walletOf(h.db, owner.walletId), { balance: 9994, reserved: 0, charges: 1 });
  await assertLedger(t, h.db);
});

t.test('two consumers on one durable settle every session exactly once', async (t) => {
  const h = await harness(t);
  const config = testConfig(h, { BATCH_SIZE: '7' });
  const one = await startConsumer(h, config);
  const two = await startConsumer(h, config);
  const owner = await createOwner(h.db, 100_000);
  const sessions = await sessionsWithUsage(h, owner, 12);
  // Every checkpoint also republished under another Msg-Id, so both replicas see duplicates.
  for (const s of sessions) {
    await publish(h.bus, s.cps);
    for (const c of s.cps) await h.bus.publish(h.bus.subjects.usageCheckpoint(s.id), c, `${c.attachment_id}:${c.seq}:again`);
  }
  await Promise.all(sessions.map((s) => requestEnd({ ctx: { db: h.db, bus: h.bus }, input: { sessionId: s.id, cause: 'client_closed' } })));
  for (const s of sessions) t.match(await waitSettled(h.db, s.id), { billed_cents: CENTS_PER_SESSION, audio_in_ms: 30_000 });
  t.ok(one.consumer.stats.received > 0 && two.consumer.stats.received > 0, 'both replicas took part');
  t.equal(one.consumer.stats.settled + two.consumer.stats.settled, 12);
  t.same(await walletOf(h.db, owner.walletId), { balance: 100_000 - 12 * CENTS_PER_SESSION, reserved: 0, charges: 12 });
  await assertLedger(t, h.db);
});

t.test('a NATS connection dropped and restored loses nothing and counts nothing twice', async (t) => {
  const h = await harness(t);
  const { consumer, bus } = await startConsumer(h, testConfig(h, { BATCH_SIZE: '4', ACK_WAIT_MS: '1000' }));
  const owner = await createOwner(h.db);
  const sessions = await sessionsWithUsage(h, owner, 4);
  for (const [i, s] of sessions.entries()) {
    await publish(h.bus, s.cps.slice(0, 3));
    if (i % 2 === 0) await bus.nc.reconnect();
  }
  await bus.nc.reconnect();
  for (const s of sessions) await publish(h.bus, s.cps.slice(3));
  await Promise.all(sessions.map((s) => requestEnd({ ctx: { db: h.db, bus: h.bus }, input: { sessionId: s.id, cause: 'client_closed' } })));
  await bus.nc.reconnect();
  for (const s of sessions)
    t.match(await waitSettled(h.db, s.id), { billed_cents: CENTS_PER_SESSION, audio_in_ms: 30_000, audio_out_ms: 30_000 });
  t.equal(consumer.stats.deadLettered, 0);
  t.same(await walletOf(h.db, owner.walletId), { balance: 10_000 - 4 * CENTS_PER_SESSION, reserved: 0, charges: 4 });
  await assertLedger(t, h.db);
});

/** A TCP proxy to PostgreSQL that can refuse and cut every connection: the database "goes down". */
async function pgProxy(t: { teardown(fn: () => unknown): void }) {
  const sockets = new Set<Socket>();
  let down = false;
  const server = createServer((client) => {
    if (down) return void client.destroy();
    const upstream = connect(5432, '127.0.0.1');
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('error', () => undefined);
      s.on('close', () => {
        sockets.delete(s);
        client.destroy();
        upstream.destroy();
      });
    }
    client.pipe(upstream).pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(
    () =>
      new Promise((resolve) => {
        server.close(resolve);
        for (const s of sockets) s.destroy();
      }),
  );
  return {
    port: (server.address() as AddressInfo).port,
    cut() {
      down = true;
      for (const s of sockets) s.destroy();
    },
    restore() {
      down = false;
    },
  };
}

t.test('a database outage holds the batch: nothing is dead-lettered, nothing lost', async (t) => {
  const h = await harness(t);
  const proxy = await pgProxy(t);
  const url = new URL(h.url);
  url.port = String(proxy.port);
  const config = testConfig({ url: url.toString(), prefix: h.prefix }, { ACK_WAIT_MS: '600', MAX_DELIVER: '3' });
  const { consumer } = await startConsumer({ ...h, url: url.toString() }, config);
  const owner = await createOwner(h.db);
  const [s] = await sessionsWithUsage(h, owner, 1);
  if (!s) throw new Error('no session');
  await publish(h.bus, s.cps.slice(0, 2));
  await waitFor('first checkpoints folded', async () => consumer.stats.advanced >= 1);

  proxy.cut();
  await publish(h.bus, s.cps.slice(2));
  await requestEnd({ ctx: { db: h.db, bus: h.bus }, input: { sessionId: s.id, cause: 'client_closed' } });
  // Several ack waits and more than max_deliver ack timeouts' worth of time pass while the store is down.
  await new Promise((r) => setTimeout(r, 2500));
  t.equal(consumer.stats.deadLettered, 0, 'an outage is not a poison message');
  proxy.restore();

  t.match(await waitSettled(h.db, s.id), { billed_cents: CENTS_PER_SESSION, audio_in_ms: 30_000, audio_out_ms: 30_000 });
  t.equal(consumer.stats.deadLettered, 0);
  t.same(await walletOf(h.db, owner.walletId), { balance: 10_000 - CENTS_PER_SESSION, reserved: 0, charges: 1 });
  await assertLedger(t, h.db);
});
