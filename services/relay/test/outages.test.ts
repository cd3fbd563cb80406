// Issue 8, items 1 and 3 on the relay: no measured usage given up while the relay lives, a lease billing
// can see, and an activation that survives a store outage.
import t from 'tap';
import type { Bus } from '@s2s/bus';
import type { DbHandle } from '@s2s/db';
import {
  attach,
  attachUrl,
  createKey,
  createModel,
  eventually,
  frames,
  newSession,
  sessionRow,
  setupRelay,
  sleep,
  tone,
} from './helpers.js';

/** A bus whose JetStream publishes fail while `down` says so (the connection itself stays up). */
function flakyBus(down: () => boolean): (bus: Bus) => Bus {
  return (bus) => ({
    ...bus,
    publish: (subject, message, msgId, headers) =>
      down() ? Promise.reject(new Error('simulated JetStream outage')) : bus.publish(subject, message, msgId, headers),
    publishAcked: (subject, payload, msgId, headers) =>
      down() ? Promise.reject(new Error('simulated JetStream outage')) : bus.publishAcked(subject, payload, msgId, headers),
  });
}

/** A database whose pool refuses the statements `fails` picks, as an unreachable server would. */
function flakyDb(fails: (sql: string) => boolean): (db: DbHandle) => DbHandle {
  return (db) => {
    const pool = new Proxy(db.pool, {
      get(target, prop) {
        if (prop === 'query') {
          return (text: unknown, values?: unknown) => {
            const sql = typeof text === 'string' ? text : ((text as { text?: string }).text ?? '');
            if (fails(sql))
              return Promise.reject(Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' }));
            return (target.query as (a: unknown, b?: unknown) => Promise<unknown>)(text, values);
          };
        }
        const v = Reflect.get(target, prop, target) as unknown;
        return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
      },
    });
    return { ...db, pool };
  };
}

async function leaseOf(db: DbHandle, relayId: string): Promise<{ alive: boolean; renewed_at: Date } | undefined> {
  const { rows } = await db.pool.query<{ alive: boolean; renewed_at: Date }>(
    'SELECT expires_at > now() AS alive, renewed_at FROM relay_leases WHERE relay_id = $1',
    [relayId],
  );
  return rows[0];
}

t.test('the lease: held and renewed while the relay lives, deleted on a clean exit', async (t) => {
  const env = await setupRelay(t);
  const relay = await env.startRelay({ RELAY_LEASE_RENEW_MS: '100', RELAY_LEASE_TTL_MS: '1000' });
  const first = await eventually(
    () => leaseOf(env.db, relay.config.RELAY_ID),
    (l) => l?.alive === true,
  );
  t.ok(first?.alive, 'a live lease');
  const later = await eventually(
    () => leaseOf(env.db, relay.config.RELAY_ID),
    (l) => l !== undefined && first !== undefined && l.renewed_at.getTime() > first.renewed_at.getTime(),
  );
  t.ok(later && first && later.renewed_at > first.renewed_at, 'renewed');
  await relay.app.close();
  t.equal(await leaseOf(env.db, relay.config.RELAY_ID), undefined, 'deleted after the drain');
});

t.test('a final checkpoint is retried past the old window; the drain waits for it, lease held meanwhile', async (t) => {
  const env = await setupRelay(t);
  await createModel(env.db, { id: 'local/echo', providerModel: 'echo-stream' });
  const key = await createKey(env.db, 10_000);
  const s = await newSession(env.db, key, 'local/echo');
  let down = true;
  const relay = await env.startRelay({}, { bus: flakyBus(() => down) });
  const { client } = await attach(attachUrl(relay.url, s.id), key.secret);
  for (const f of frames(tone(200))) client.append(f);
  for (let i = 0; i < 10; i++) await client.next('response.output_audio.delta');

  // The old relay gave the final checkpoint up after six tries over about 4 s.
  const outage = sleep(6000).then(() => (down = false));
  const closing = relay.app.close();
  await sleep(500);
  t.equal((await leaseOf(env.db, relay.config.RELAY_ID))?.alive, true, 'billing sees a live relay while usage is unpublished');
  t.notOk(
    env.checkpoints.some((c) => c.session_id === s.id),
    'nothing published during the outage',
  );
  await closing;
  await outage;
  const final = env.checkpoints.find((c) => c.session_id === s.id && c.final);
  t.ok(final, 'the final checkpoint was published once the bus came back');
  t.equal(final?.audio_in_ms, 200, 'all the input');
  t.equal(final?.audio_out_ms, 200, 'all the output');
  t.equal(await leaseOf(env.db, relay.config.RELAY_ID), undefined, 'the lease is deleted only after it');
  t.equal(client.closeCode, 1012, 'the client was told to attach again');
});

t.test('periodic checkpoints are retried and sent only when the counters changed', async (t) => {
  const env = await setupRelay(t);
  await createModel(env.db, { id: 'local/echo', providerModel: 'echo-stream' });
  const key = await createKey(env.db, 10_000);
  const s = await newSession(env.db, key, 'local/echo');
  let down = true;
  const relay = await env.startRelay({ CHECKPOINT_INTERVAL_MS: '50' }, { bus: flakyBus(() => down) });
  const { client } = await attach(attachUrl(relay.url, s.id), key.secret);
  for (const f of frames(tone(100))) client.append(f);
  for (let i = 0; i < 5; i++) await client.next('response.output_audio.delta');
  await sleep(600);
  down = false;
  const cp = await eventually(
    () => env.checkpoints.filter((c) => c.session_id === s.id),
    (l) => l.some((c) => c.audio_in_ms === 100),
  );
  t.ok(
    cp.some((c) => c.audio_in_ms === 100 && !c.final),
    'the usage measured during the outage was published after it',
  );
  await sleep(500);
  const periodic = env.checkpoints.filter((c) => c.session_id === s.id && !c.final);
  t.equal(periodic.length, 1, 'unchanged counters send nothing more');
  await client.close();
  const final = await eventually(
    () => env.checkpoints.find((c) => c.session_id === s.id && c.final),
    (c) => c !== undefined,
  );
  t.equal(final?.audio_in_ms, 100, 'the final one is always sent');
});

t.test('activation: retried until stored when the store is down at the first input', async (t) => {
  const env = await setupRelay(t);
  await createModel(env.db, { id: 'local/echo', providerModel: 'echo-stream' });
  const key = await createKey(env.db, 10_000);
  const s = await newSession(env.db, key, 'local/echo');
  let failures = 0;
  const relay = await env.startRelay({}, { db: flakyDb((sql) => sql.includes("status = 'active'") && failures++ < 4) });
  const { client } = await attach(attachUrl(relay.url, s.id), key.secret);
  client.append(tone(20));
  await client.next('response.output_audio.delta');
  const row = await eventually(
    () => sessionRow(env.db, s.id),
    (r) => r?.status === 'active',
  );
  t.equal(row?.status, 'active', 'the session is active in the store');
  t.ok(failures >= 5, 'after the failed attempts');
  t.ok(row?.activated_at, 'with its activation time');
  await client.close();
});
