import { randomBytes } from 'node:crypto';
import t from 'tap';
import { connectBus, subscribeMessages } from '@s2s/bus';
import type { BusMessage } from '@s2s/contract';
import { createTestDatabase, createWalletAndKey } from '@s2s/db/testing';
import { createSession, recordAttachment, requestEnd } from '../src/index.js';

const SETTINGS = { preauthMinutes: 10, idleTimeoutSeconds: 300, maxSeconds: 3600 };

async function setup(t: Parameters<typeof createTestDatabase>[0] & { teardown(fn: () => unknown): void }) {
  const { db } = await createTestDatabase(t);
  const bus = await connectBus({ url: 'nats://127.0.0.1:4222', prefix: `t_${randomBytes(4).toString('hex')}` });
  t.teardown(async () => {
    await bus.jsm.streams.delete(bus.subjects.stream).catch(() => {});
    await bus.close();
  });
  const { keyId, walletId } = await createWalletAndKey(db.pool, { balanceCents: 1000 });
  await db.pool.query(
    `INSERT INTO catalog_models (id, display_name, owned_by, provider, provider_model, enabled, approved, capabilities, audio, modalities)
     VALUES ('local/a', 'A', 'test', 'local', 'm', true, true, '{"speech_to_speech":true}', '{}', '{}')`,
  );
  await db.pool.query(
    `INSERT INTO rate_snapshots (id, model_id, source, per_minute, audio_in_token, audio_out_token, relay_fee_milli_cents)
     VALUES ('rate_a', 'local/a', 'upstream_derived', 1000, 10, 20, 500)`,
  );
  await db.pool.query(`UPDATE catalog_models SET current_rate_id = 'rate_a' WHERE id = 'local/a'`);
  const make = async () =>
    (
      await createSession({
        ctx: { db },
        input: {
          key: { keyId, walletId },
          request: { model: 'local/a', mode: 'speech_to_speech' },
          traceId: randomBytes(16).toString('hex'),
          policy: SETTINGS,
        },
      })
    ).session;
  return { db, bus, make };
}

t.test('the first cause wins and is announced once per Msg-Id', async (t) => {
  const { db, bus, make } = await setup(t);
  const s = await make();
  const seen: BusMessage[] = [];
  const sub = subscribeMessages(bus.nc, bus.subjects.endRequested(s.id), (m) => seen.push(m));
  t.teardown(() => sub.unsubscribe());

  const first = await requestEnd({ ctx: { db, bus }, input: { sessionId: s.id, cause: 'client_closed' } });
  t.match(first, { sessionId: s.id, cause: 'client_closed', terminalStatus: 'cancelled', first: true });
  const second = await requestEnd({ ctx: { db, bus }, input: { sessionId: s.id, cause: 'error' } });
  t.match(second, { cause: 'client_closed', terminalStatus: 'cancelled', first: false }, 'a later cause does not replace it');
  await bus.nc.flush();
  t.ok(seen.length >= 1);
  t.match(seen[0], { type: 'session.end_requested', session_id: s.id, cause: 'client_closed', terminal_status: 'cancelled' });
  const info = await bus.jsm.streams.info(bus.subjects.stream);
  t.equal(info.state.messages, 1, 'the repeated announcement is a duplicate the stream dropped');
  t.equal(await requestEnd({ ctx: { db, bus }, input: { sessionId: 'vs_missing', cause: 'client_closed' } }), null);
});

t.test('an expiry cause re-checks the deadline under the lock', async (t) => {
  const { db, bus, make } = await setup(t);
  const s = await make();
  // Decided from a stale read 301 s after creation, but activity moved the deadline meanwhile.
  const late = new Date(s.createdAt.getTime() + 301_000);
  await db.pool.query(`UPDATE voice_sessions SET last_activity_at = $2 WHERE id = $1`, [s.id, new Date(late.getTime() - 1000)]);
  t.equal(
    await requestEnd({ ctx: { db, bus }, input: { sessionId: s.id, cause: 'idle_timeout', now: late } }),
    null,
    'not expired any more: nothing happens',
  );
  const row = await db.pool.query('SELECT end_requested_at FROM voice_sessions WHERE id = $1', [s.id]);
  t.equal(row.rows[0].end_requested_at, null);

  const muchLater = new Date(late.getTime() + 300_000);
  t.match(await requestEnd({ ctx: { db, bus }, input: { sessionId: s.id, cause: 'idle_timeout', now: muchLater } }), {
    terminalStatus: 'expired',
    first: true,
  });
  const fresh = await make();
  t.equal(
    await requestEnd({ ctx: { db, bus }, input: { sessionId: fresh.id, cause: 'max_duration' } }),
    null,
    'by the database clock a fresh session is not past its maximum',
  );
});

t.test('whileNewest: an end decided for an attachment is not recorded once a newer one holds the session', async (t) => {
  const { db, bus, make } = await setup(t);
  const s = await make();
  const attach = async (id: string, transport: 'twilio' | 'websocket') =>
    recordAttachment({
      ctx: { db },
      input: { sessionId: s.id, attachmentId: id, relayId: 'relay-1', transport, dialect: transport === 'twilio' ? 'twilio' : 'openai' },
    });
  t.ok(await attach('att_phone', 'twilio'));
  t.match(await db.pool.query(`SELECT transport, dialect FROM session_attachments WHERE id = 'att_phone'`), {
    rows: [{ transport: 'twilio', dialect: 'twilio' }],
  });
  t.ok(await attach('att_socket', 'websocket'));
  await db.pool.query(`UPDATE session_attachments SET started_at = started_at + interval '1 second' WHERE id = 'att_socket'`);
  t.equal(await requestEnd({ ctx: { db, bus }, input: { sessionId: s.id, cause: 'relay_lost', whileNewest: 'att_phone' } }), null);
  t.match(await db.pool.query(`SELECT end_cause FROM voice_sessions WHERE id = $1`, [s.id]), { rows: [{ end_cause: null }] });
  t.match(await requestEnd({ ctx: { db, bus }, input: { sessionId: s.id, cause: 'relay_lost', whileNewest: 'att_socket' } }), {
    cause: 'relay_lost',
    terminalStatus: 'failed',
    first: true,
  });
});
