// POST /v1/voice/sessions/{id}/end against a real billing process (services/billing/src/main.ts, spawned
// as a child like `npm start` runs it) on the same database and bus prefix.
import t from 'tap';
import { subscribeMessages } from '@s2s/bus';
import { encodeUsageCheckpoint, VoiceSession, type UsageCheckpoint } from '@s2s/contract';
import { newId, USAGE_COUNTERS, usageCheckpointMsgId, usageOf, type Usage } from '@s2s/core';
import { createDb } from '@s2s/db';
import { checkLedgerInvariants } from '@s2s/db/testing';
import { api, bearer, createKey, createSession, startBilling, startControlPlane, walletRow, type Harness } from './helpers.js';

/** The billing process of these tests: a short grace for gone relays, a fast expiry sweeper. */
const END_ENV = { END_GRACE_MS: '300', SWEEP_INTERVAL_MS: '200' };
/**
 * The control plane of those tests waits up to 30 s for the settlement (8 s as shipped): on a loaded CI
 * machine the billing child can take longer than 8 s, and the answer would be a 409 instead of the resource.
 */
const SETTLE_WAIT = { env: { END_WAIT_MS: '30000' } };

function end(
  h: { url: string },
  key: string | undefined,
  id: string,
  opts: { json?: unknown; raw?: string; headers?: Record<string, string> } = {},
) {
  return api(h, 'POST', `/v1/voice/sessions/${encodeURIComponent(id)}/end`, {
    ...opts,
    headers: { ...(key === undefined ? {} : bearer(key)), ...opts.headers },
  });
}

async function sessionRow(h: Harness, id: string) {
  const { rows } = await h.db.pool.query(
    'SELECT status, end_requested_at, end_cause, settled_at, billed_cents FROM voice_sessions WHERE id = $1',
    [id],
  );
  return rows[0];
}

async function count(h: Harness, sql: string, values: unknown[] = []): Promise<number> {
  const { rows } = await h.db.pool.query<{ n: number }>(`SELECT (${sql})::float8 AS n`, values);
  return rows[0]?.n ?? 0;
}

/** What a relay does: an attachment row, then cumulative checkpoints, the last one `final` when told to stop. */
async function relayAttachment(h: Harness, sessionId: string, partial: Partial<Usage>) {
  const id = newId('att');
  const total = usageOf(partial);
  await h.db.pool.query(`INSERT INTO session_attachments (id, session_id, relay_id) VALUES ($1, $2, 'relay-t')`, [id, sessionId]);
  await h.db.pool.query(`UPDATE voice_sessions SET status = 'active', activated_at = now(), last_activity_at = now() WHERE id = $1`, [
    sessionId,
  ]);
  const cp = (seq: number, share: number, final: boolean): UsageCheckpoint => ({
    type: 'usage.checkpoint',
    version: 4,
    session_id: sessionId,
    attachment_id: id,
    relay_id: 'relay-t',
    seq,
    ...(Object.fromEntries(USAGE_COUNTERS.map((k) => [k, total[k] * share])) as Record<keyof Usage, number>),
    routes: null,
    final,
    emitted_at: Date.now(),
  });
  await publishCheckpoint(h, cp(1, 0.5, false));
  // The final checkpoint goes out when the end request reaches the relay.
  const sub = subscribeMessages(h.bus.nc, h.bus.subjects.endRequested(sessionId), () => {
    sub.unsubscribe();
    void publishCheckpoint(h, cp(2, 1, true));
  });
}

/** A checkpoint as a relay publishes it: the contract's encoder, the Msg-Id of its attachment and seq. */
function publishCheckpoint(h: Harness, c: UsageCheckpoint) {
  return h.bus.publishAcked(h.bus.subjects.usageCheckpoint(c.session_id), encodeUsageCheckpoint(c), usageCheckpointMsgId(c));
}

t.test('200: the settled terminal resource, billed from server usage of every attachment; a repeat changes nothing', async (t) => {
  const h = await startControlPlane(t, SETTLE_WAIT);
  await startBilling(t, h, END_ENV);
  const key = await createKey(h, 1000);
  const { body: created } = await createSession(h, key.key);
  await relayAttachment(h, created.id, { audio_in_ms: 60_000, audio_out_ms: 30_000, input_audio_tokens: 600, output_audio_tokens: 600 });
  await relayAttachment(h, created.id, { audio_in_ms: 30_000, audio_out_ms: 30_000, input_audio_tokens: 300, output_audio_tokens: 600 });

  const res = await end(h, key.key, created.id);
  t.equal(res.status, 200, res.text);
  t.ok(VoiceSession.safeParse(res.body).success, 'strict contract shape');
  t.match(res.headers.get('x-request-id'), /^req_/);
  // local/echo-1: 1000 mc/min * 150 000 ms = 2500 mc, + 10 * 900 + 20 * 1200 + 500 fee = 36 000 mc -> 36 cents.
  t.match(res.body, {
    id: created.id,
    status: 'completed',
    billing: { preauthorized_cents: created.billing.preauthorized_cents, balance_cents: 964, reserved_cents: 0 },
    usage: { audio_in_ms: 90_000, audio_out_ms: 60_000, billed_cents: 36 },
  });
  t.same(await walletRow(h, key.wallet_id), { balance: 964, reserved: 0 });

  const again = await end(h, key.key, created.id, { json: { reason: 'error' } });
  t.equal(again.status, 200);
  t.same(again.body, res.body, 'the same terminal resource; the new reason changes nothing');
  t.equal(await count(h, 'SELECT count(*) FROM settlements'), 1);
  t.same(await checkLedgerInvariants(h.db.pool), []);
});

t.test('terminal status by reason; an unused session bills nothing', async (t) => {
  const h = await startControlPlane(t, SETTLE_WAIT);
  await startBilling(t, h, END_ENV);
  const key = await createKey(h, 1000);
  const cases = [
    [undefined, 'cancelled'],
    [{}, 'cancelled'],
    [{ reason: 'client_closed' }, 'cancelled'],
    [{ reason: 'error' }, 'failed'],
    [{ reason: 'timeout' }, 'expired'],
  ] as const;
  for (const [body, status] of cases) {
    const { body: s } = await createSession(h, key.key);
    const res = await end(h, key.key, s.id, body === undefined ? {} : { json: body });
    t.match(
      [res.status, res.body.status, res.body.usage.billed_cents, res.body.billing.reserved_cents],
      [200, status, 0, 0],
      JSON.stringify(body),
    );
  }
  const { body: active } = await createSession(h, key.key);
  await h.db.pool.query(`UPDATE voice_sessions SET status = 'active' WHERE id = $1`, [active.id]);
  t.equal((await end(h, key.key, active.id, { json: { reason: 'client_closed' } })).body.status, 'completed');
  t.same(await walletRow(h, key.wallet_id), { balance: 1000, reserved: 0 });
  t.same(await checkLedgerInvariants(h.db.pool), []);
});

t.test('400 invalid_request for a malformed body, an unsupported field or client-reported usage; nothing ends', async (t) => {
  const h = await startControlPlane(t);
  const key = await createKey(h, 1000);
  const { body: s } = await createSession(h, key.key);
  const json = { 'content-type': 'application/json' };
  const bad: [string, { json?: unknown; raw?: string; headers?: Record<string, string> }][] = [
    ['malformed JSON', { raw: '{"reason":', headers: json }],
    ['array', { json: [] }],
    ['string', { raw: '"client_closed"', headers: json }],
    ['null', { raw: 'null', headers: json }],
    ['unknown reason', { json: { reason: 'bored' } }],
    ['null reason', { json: { reason: null } }],
    ['unsupported field', { json: { foo: 1 } }],
    ['usage_cents', { json: { usage_cents: 1 } }],
    ['elapsed time', { json: { reason: 'client_closed', elapsed_ms: 1000 } }],
    ['token count', { json: { input_audio_tokens: 10 } }],
    ['usage object', { json: { usage: { audio_in_ms: 1 } } }],
    ['not JSON', { raw: 'reason=client_closed', headers: { 'content-type': 'application/x-www-form-urlencoded' } }],
  ];
  for (const [name, opts] of bad) {
    const res = await end(h, key.key, s.id, opts);
    t.same([res.status, res.body?.error?.code, res.body?.error?.type], [400, 'invalid_request', 'invalid_request_error'], name);
    t.match(res.body.error.request_id, /^req_/);
  }
  t.match(await sessionRow(h, s.id), { status: 'ready', end_requested_at: null, settled_at: null });
  t.same(await checkLedgerInvariants(h.db.pool), []);
});

t.test('security: key, then ownership, then body; nothing leaks and nothing ends', async (t) => {
  const h = await startControlPlane(t);
  const owner = await createKey(h, 1000);
  const other = await createKey(h, 1000);
  const { body: s } = await createSession(h, owner.key);
  const malformed = { raw: '{', headers: { 'content-type': 'application/json' } };
  for (const [name, key, opts] of [
    ['no key', undefined, {}],
    ['malformed key', 'vr_sk_x', {}],
    ['unknown key', `vr_sk_${'Z'.repeat(40)}`, {}],
    ['another owner', other.key, {}],
    ['another owner with a bad body', other.key, malformed],
    ['no key with a bad body', undefined, malformed],
  ] as const) {
    const res = await end(h, key, s.id, opts);
    t.same([res.status, res.body.error.code, res.body.error.type], [401, 'invalid_vr_sk', 'authentication_error'], name);
    t.notMatch(res.text, /usage|billing|cents|local\/echo/, `${name}: nothing of the session leaks`);
  }
  const missing = await end(h, owner.key, 'vs_doesnotexist0000000000', malformed);
  t.same([missing.status, missing.body.error.code], [404, 'session_not_found'], 'ownership before body');
  t.match(await sessionRow(h, s.id), { end_requested_at: null });
  t.notMatch(h.logLines.join('\n'), new RegExp(owner.key), 'the key never reaches a log');
});

t.test('409 when settlement cannot finish in time; the session still settles exactly once later', async (t) => {
  const h = await startControlPlane(t, { env: { END_WAIT_MS: '300' } });
  const key = await createKey(h, 1000);
  const { body: s } = await createSession(h, key.key);
  const res = await end(h, key.key, s.id);
  t.same([res.status, res.body.error.code, res.body.error.type], [409, 'session_termination_failed', 'conflict_error']);
  t.match(await sessionRow(h, s.id), { end_cause: 'client_closed', settled_at: null });

  await startBilling(t, h, END_ENV);
  const deadline = Date.now() + 30_000;
  while (!(await sessionRow(h, s.id)).settled_at && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  const later = await end(h, key.key, s.id);
  t.match([later.status, later.body.status, later.body.usage.billed_cents], [200, 'cancelled', 0]);
  t.equal(await count(h, 'SELECT count(*) FROM settlements'), 1);
  t.same(await walletRow(h, key.wallet_id), { balance: 1000, reserved: 0 });
  t.same(await checkLedgerInvariants(h.db.pool), []);
});

t.test('concurrent end requests for one session all answer the one settlement', async (t) => {
  const h = await startControlPlane(t, SETTLE_WAIT);
  await startBilling(t, h, END_ENV);
  const key = await createKey(h, 1000);
  const { body: s } = await createSession(h, key.key);
  await relayAttachment(h, s.id, { audio_in_ms: 6000, audio_out_ms: 6000, input_audio_tokens: 60, output_audio_tokens: 120 });
  const answers = await Promise.all(
    [undefined, { reason: 'error' }, { reason: 'timeout' }, {}, { reason: 'client_closed' }].map((json) =>
      end(h, key.key, s.id, json ? { json } : {}),
    ),
  );
  for (const a of answers) t.equal(a.status, 200);
  const first = answers[0]!.body;
  for (const a of answers) t.same([a.body.status, a.body.usage.billed_cents], [first.status, first.usage.billed_cents]);
  // 200 mc + 600 + 2400 + 500 = 3700 mc -> 4 cents.
  t.equal(first.usage.billed_cents, 4);
  t.equal(await count(h, 'SELECT count(*) FROM settlements'), 1);
  t.same(await walletRow(h, key.wallet_id), { balance: 996, reserved: 0 });
  t.same(await checkLedgerInvariants(h.db.pool), []);
});

t.test('an idle session past its deadline ends as expired and answers 200 with its terminal resource', async (t) => {
  const h = await startControlPlane(t, SETTLE_WAIT);
  await startBilling(t, h, END_ENV);
  const key = await createKey(h, 1000);
  const { body: s } = await createSession(h, key.key);
  h.advanceClock(301_000);
  const res = await end(h, key.key, s.id, { json: { reason: 'client_closed' } });
  t.match([res.status, res.body.status, res.body.usage.billed_cents], [200, 'expired', 0]);
  t.match(await sessionRow(h, s.id), { end_cause: 'idle_timeout' });
  const again = await end(h, key.key, s.id);
  t.same(again.body, res.body);
  t.same(await checkLedgerInvariants(h.db.pool), []);
});

t.test('503 session_store_unavailable when the store is down', async (t) => {
  const down = createDb('postgres://postgres@127.0.0.1:1/unreachable', { connectionTimeoutMs: 500 });
  const h = await startControlPlane(t, { db: down });
  const res = await end(h, `vr_sk_${'A'.repeat(40)}`, 'vs_any');
  t.same([res.status, res.body.error.code, res.body.error.type], [503, 'session_store_unavailable', 'service_unavailable_error']);
  t.notMatch(res.text, /127\.0\.0\.1|ECONNREFUSED|postgres/);
});
