import t from 'tap';
import { VoiceSession, type BusMessage } from '@s2s/contract';
import { subscribeMessages } from '@s2s/bus';
import { checkLedgerInvariants } from '@s2s/db/testing';
import { ECHO_PREAUTH_CENTS, adminHeaders, api, bearer, createKey, createSession, startControlPlane, type Harness } from './helpers.js';

function getSession(h: Harness, key: string | undefined, id: string) {
  return api(h, 'GET', `/v1/voice/sessions/${encodeURIComponent(id)}`, { headers: key === undefined ? {} : bearer(key) });
}

async function sessionRow(h: Harness, id: string) {
  const { rows } = await h.db.pool.query(
    'SELECT status, end_cause, terminal_status, end_requested_at, settled_at FROM voice_sessions WHERE id = $1',
    [id],
  );
  return rows[0];
}

/** The next message published on a subject (core subscription; JetStream publishes reach it too). */
function nextMessage(h: Harness, subject: string): Promise<BusMessage> {
  return new Promise((resolve) => {
    const sub = subscribeMessages(h.bus.nc, subject, (message) => {
      sub.unsubscribe();
      resolve(message);
    });
  });
}

t.test('200: the owner reads its session', async (t) => {
  const h = await startControlPlane(t);
  const key = await createKey(h, 1000);
  const created = await createSession(h, key.key);
  const res = await getSession(h, key.key, created.body.id);
  t.equal(res.status, 200);
  t.ok(VoiceSession.safeParse(res.body).success, 'strict contract shape');
  t.same(res.body, created.body, 'same resource as the create answer');
  t.match(res.headers.get('x-request-id'), /^req_/);

  // Before settlement the usage is what the relay's attachments have reported so far.
  await h.db.pool.query(
    `INSERT INTO session_attachments (id, session_id, relay_id, seq, audio_in_ms, audio_out_ms) VALUES ('att_1', $1, 'relay_1', 3, 480, 240)`,
    [created.body.id],
  );
  const later = await getSession(h, key.key, created.body.id);
  t.same([later.body.usage.audio_in_ms, later.body.usage.audio_out_ms, later.body.usage.billed_cents], [480, 240, 0]);
});

t.test('security: other owner 401, no such session 404, bad keys 401', async (t) => {
  const h = await startControlPlane(t);
  const owner = await createKey(h, 1000);
  const other = await createKey(h, 1000);
  const { body: session } = await createSession(h, owner.key);

  const foreign = await getSession(h, other.key, session.id);
  t.equal(foreign.status, 401);
  t.same(Object.keys(foreign.body), ['error']);
  t.same([foreign.body.error.code, foreign.body.error.type], ['invalid_vr_sk', 'authentication_error']);
  t.notMatch(foreign.text, /usage|billing|cents|local\/echo/, 'nothing of the session leaks');

  const missing = await getSession(h, owner.key, 'vs_doesnotexist0000000000');
  t.same([missing.status, missing.body.error.code, missing.body.error.type], [404, 'session_not_found', 'not_found_error']);
  const missingForOther = await getSession(h, other.key, 'vs_doesnotexist0000000000');
  t.equal(missingForOther.status, 404);

  for (const [name, key] of [
    ['no key', undefined],
    ['malformed', 'vr_sk_x'],
    ['wrong', `vr_sk_${'C'.repeat(40)}`],
  ] as const) {
    const res = await getSession(h, key, session.id);
    t.same([res.status, res.body.error.code], [401, 'invalid_vr_sk'], name);
  }
  await api(h, 'POST', `/admin/v1/keys/${owner.id}/revoke`, { headers: adminHeaders });
  const revoked = await getSession(h, owner.key, session.id);
  t.same([revoked.status, revoked.body.error.code], [401, 'invalid_vr_sk'], 'revoked owner');
});

t.test('a read past the idle deadline expires the session: 410, end requested on the bus', async (t) => {
  const h = await startControlPlane(t);
  const key = await createKey(h, 1000);
  const { body: session } = await createSession(h, key.key);
  h.advanceClock(299_000);
  t.equal((await getSession(h, key.key, session.id)).status, 200, 'still inside the idle timeout');

  const announced = nextMessage(h, h.bus.subjects.endRequested(session.id));
  h.advanceClock(2_000);
  const res = await getSession(h, key.key, session.id);
  t.same([res.status, res.body.error.code, res.body.error.type], [410, 'session_expired', 'gone_error']);
  t.equal(res.body.error.request_id, res.headers.get('x-request-id'));
  const row = await sessionRow(h, session.id);
  t.same(
    [row.status, row.end_cause, row.terminal_status, row.settled_at],
    ['ready', 'idle_timeout', 'expired', null],
    'billing settles it later',
  );
  const message = await announced;
  t.match(message, {
    type: 'session.end_requested',
    version: 1,
    session_id: session.id,
    cause: 'idle_timeout',
    terminal_status: 'expired',
  });

  const again = await getSession(h, key.key, session.id);
  t.same([again.status, again.body.error.code], [410, 'session_expired'], 'a pending expiry stays 410');
  t.equal((await sessionRow(h, session.id)).end_requested_at.getTime(), row.end_requested_at.getTime(), 'requested once');
  t.same(await checkLedgerInvariants(h.db.pool), [], 'the reservation is held until settlement');
});

t.test('the maximum length expires a session too', async (t) => {
  const h = await startControlPlane(t, { env: { SESSION_MAX_SECONDS: '60' } });
  const key = await createKey(h, 1000);
  const { body: session } = await createSession(h, key.key);
  t.equal(session.expires_at - session.created_at, 60, 'expires_at is capped by the maximum length');
  h.advanceClock(61_000);
  const res = await getSession(h, key.key, session.id);
  t.equal(res.status, 410);
  t.equal((await sessionRow(h, session.id)).end_cause, 'max_duration');
});

t.test('terminal and pending-terminal sessions', async (t) => {
  const h = await startControlPlane(t);
  const key = await createKey(h, 10_000);
  const settle = async (id: string, status: string, billed: number) => {
    await h.db.pool.query(
      `WITH s AS (
         UPDATE voice_sessions SET status = $2, terminal_status = $2, end_cause = 'client_closed', end_requested_at = now(),
                settled_at = now(), reserved_cents = 0, billed_cents = $3, audio_in_ms = 1000, audio_out_ms = 500
          WHERE id = $1 RETURNING wallet_id, preauthorized_cents)
       UPDATE wallets w SET reserved_cents = w.reserved_cents - s.preauthorized_cents, balance_cents = w.balance_cents - $3
         FROM s WHERE w.id = s.wallet_id`,
      [id, status, billed],
    );
  };

  const completed = (await createSession(h, key.key)).body;
  await settle(completed.id, 'completed', 5);
  const read = await getSession(h, key.key, completed.id);
  t.equal(read.status, 200);
  t.equal(read.body.status, 'completed');
  t.same(read.body.billing, { preauthorized_cents: ECHO_PREAUTH_CENTS, balance_cents: 10_000 - 5, reserved_cents: 0 });
  t.same([read.body.usage.audio_in_ms, read.body.usage.audio_out_ms, read.body.usage.billed_cents], [1000, 500, 5]);
  h.advanceClock(10 * 3600_000);
  t.equal((await getSession(h, key.key, completed.id)).status, 200, 'a settled session is never re-expired');

  const expired = (await createSession(h, key.key)).body;
  await settle(expired.id, 'expired', 0);
  t.same([(await getSession(h, key.key, expired.id)).status], [410], 'settled as expired: 410');

  const pendingCancel = (await createSession(h, key.key)).body;
  await h.db.pool.query(
    `UPDATE voice_sessions SET end_requested_at = now(), end_cause = 'client_closed', terminal_status = 'cancelled' WHERE id = $1`,
    [pendingCancel.id],
  );
  const cancelled = await getSession(h, key.key, pendingCancel.id);
  t.same([cancelled.status, cancelled.body.status], [200, 'ready'], 'a pending cancel is not an expiry, even past the deadline');
  t.equal((await sessionRow(h, pendingCancel.id)).end_cause, 'client_closed', 'the first cause wins');

  const pendingTimeout = (await createSession(h, key.key)).body;
  await h.db.pool.query(
    `UPDATE voice_sessions SET end_requested_at = now(), end_cause = 'timeout', terminal_status = 'expired' WHERE id = $1`,
    [pendingTimeout.id],
  );
  t.equal((await getSession(h, key.key, pendingTimeout.id)).status, 410, 'pending expired: 410');
  t.same(await checkLedgerInvariants(h.db.pool).then((v) => v.filter((x) => x.invariant === 'funds_nonnegative')), []);
});
