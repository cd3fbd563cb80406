import t from 'tap';
import { ErrorResponse, REALTIME_PROTOCOL, VoiceSession } from '@s2s/contract';
import {
  attach,
  attachUrl,
  countRows,
  createKey,
  createModel,
  eventually,
  newSession,
  refused,
  sessionRow,
  setupRelay,
  tone,
  walletOf,
} from './helpers.js';

t.test('every refusal before the upgrade is an HTTP ErrorResponse and creates nothing', async (t) => {
  const env = await setupRelay(t);
  const { db } = env;
  await createModel(db, { id: 'local/echo', providerModel: 'echo-stream' });
  const owner = await createKey(db, 10_000);
  const other = await createKey(db, 10_000);
  const revoked = await createKey(db, 10_000, { revoked: true });
  const live = await newSession(db, owner, 'local/echo');
  const ended = await newSession(db, owner, 'local/echo');
  await db.pool.query(
    `UPDATE voice_sessions SET end_requested_at = now(), end_cause = 'client_closed', terminal_status = 'cancelled' WHERE id = $1`,
    [ended.id],
  );
  const terminal = await newSession(db, owner, 'local/echo');
  await db.pool.query(`UPDATE voice_sessions SET status = 'cancelled', settled_at = now(), reserved_cents = 0 WHERE id = $1`, [
    terminal.id,
  ]);
  const idle = await newSession(db, owner, 'local/echo');
  await db.pool.query(`UPDATE voice_sessions SET last_activity_at = now() - interval '1 hour' WHERE id = $1`, [idle.id]);

  const sessionsBefore = await countRows(db, 'voice_sessions');
  const walletBefore = await walletOf(db, owner.walletId);

  const cases: { name: string; url: string; secret?: string; protocol?: string | null; status: number; code: string; type: string }[] = [
    { name: 'no key', url: attachUrl(env.url, live.id), status: 401, code: 'invalid_vr_sk', type: 'authentication_error' },
    {
      name: 'malformed key',
      url: attachUrl(env.url, live.id),
      secret: 'vr_sk_nope',
      status: 401,
      code: 'invalid_vr_sk',
      type: 'authentication_error',
    },
    {
      name: 'unknown key',
      url: attachUrl(env.url, live.id),
      secret: `vr_sk_${'x'.repeat(40)}`,
      status: 401,
      code: 'invalid_vr_sk',
      type: 'authentication_error',
    },
    {
      name: 'revoked key',
      url: attachUrl(env.url, live.id),
      secret: revoked.secret,
      status: 401,
      code: 'invalid_vr_sk',
      type: 'authentication_error',
    },
    {
      name: 'another owner',
      url: attachUrl(env.url, live.id),
      secret: other.secret,
      status: 401,
      code: 'invalid_vr_sk',
      type: 'authentication_error',
    },
    {
      name: 'unknown session',
      url: attachUrl(env.url, 'vs_nope'),
      secret: owner.secret,
      status: 404,
      code: 'session_not_found',
      type: 'not_found_error',
    },
    {
      name: 'terminal session',
      url: attachUrl(env.url, terminal.id),
      secret: owner.secret,
      status: 410,
      code: 'session_expired',
      type: 'gone_error',
    },
    {
      name: 'end requested',
      url: attachUrl(env.url, ended.id),
      secret: owner.secret,
      status: 410,
      code: 'session_expired',
      type: 'gone_error',
    },
    {
      name: 'past its idle deadline',
      url: attachUrl(env.url, idle.id),
      secret: owner.secret,
      status: 410,
      code: 'session_expired',
      type: 'gone_error',
    },
    { name: 'missing session_id', url: env.url, secret: owner.secret, status: 400, code: 'invalid_request', type: 'invalid_request_error' },
    {
      name: 'empty session_id',
      url: `${env.url}?session_id=`,
      secret: owner.secret,
      status: 400,
      code: 'invalid_request',
      type: 'invalid_request_error',
    },
    {
      name: 'missing subprotocol',
      url: attachUrl(env.url, live.id),
      secret: owner.secret,
      protocol: null,
      status: 400,
      code: 'invalid_request',
      type: 'invalid_request_error',
    },
    {
      name: 'other subprotocol',
      url: attachUrl(env.url, live.id),
      secret: owner.secret,
      protocol: 'realtime',
      status: 400,
      code: 'invalid_request',
      type: 'invalid_request_error',
    },
  ];
  for (const c of cases) {
    const r = await refused(c.url, {
      ...(c.secret ? { secret: c.secret } : {}),
      ...(c.protocol !== undefined ? { protocol: c.protocol } : {}),
    });
    t.equal(r.status, c.status, `${c.name}: status`);
    t.ok(ErrorResponse.safeParse(r.body).success, `${c.name}: ErrorResponse`);
    t.equal(r.body.error.code, c.code, `${c.name}: code`);
    t.equal(r.body.error.type, c.type, `${c.name}: type`);
    t.match(r.body.error.request_id, /^req_[0-9a-f]{32}$/, `${c.name}: request id`);
    t.equal(r.headers['x-request-id'], r.body.error.request_id, `${c.name}: X-Request-Id`);
  }
  for (const url of [`${env.url}?intent=transcription`, `${env.url}?model=local%2Fecho-1&intent=transcription`]) {
    const r = await refused(url, { secret: owner.secret, protocol: 'realtime' });
    t.equal(r.status, 400, `${url}: refused before the upgrade`);
    t.match(r.body.error, {
      code: 'invalid_request',
      message: /intent=transcription is not supported: transcription sessions are not offered yet/,
    });
  }
  const notFound = await refused(env.url.replace('/v1/realtime', '/v1/other'), { secret: owner.secret });
  t.equal(notFound.status, 404);

  t.equal(await countRows(db, 'session_attachments'), 0, 'no attachment recorded');
  t.equal(await countRows(db, 'voice_sessions'), sessionsBefore, 'no session created');
  t.same(await walletOf(db, owner.walletId), walletBefore, 'nothing reserved');
  t.equal((await sessionRow(db, live.id))?.status, 'ready');
  // The expired session was ended by the attempt, as a read would (billing settles it).
  const idleRow = await sessionRow(db, idle.id);
  t.equal(idleRow?.end_cause, 'idle_timeout');
  t.equal(idleRow?.terminal_status, 'expired');

  // A plain GET (no upgrade) and the probes.
  const plain = await fetch(env.url.replace('ws:', 'http:'));
  t.equal(plain.status, 400);
  t.equal(((await plain.json()) as ErrorResponse).error.code, 'invalid_request');
  const health = await fetch(env.url.replace('ws:', 'http:').replace('/v1/realtime', '/healthz'));
  t.same(await health.json(), { status: 'ok' });
  t.ok(health.headers.get('x-request-id'));
  const ready = await fetch(env.url.replace('ws:', 'http:').replace('/v1/realtime', '/readyz'));
  t.equal(ready.status, 200);
});

t.test('attach: session.created, conversation.created, then the first append activates the session', async (t) => {
  const env = await setupRelay(t);
  const { db } = env;
  await createModel(db, { id: 'local/echo', providerModel: 'echo-stream' });
  const key = await createKey(db, 10_000);
  const s = await newSession(db, key, 'local/echo');
  const before = await sessionRow(db, s.id);

  const { client, created, conversation } = await attach(attachUrl(env.url, s.id), key.secret);
  t.teardown(() => client.close());
  t.equal(client.ws.protocol, REALTIME_PROTOCOL, 'subprotocol selected');
  t.match(client.headers['x-request-id'], /^req_/);
  t.notOk(client.headers['deprecation']);
  t.equal(created.type, 'session.created');
  t.match(created.event_id, /^evt_/);
  const session = VoiceSession.parse(created.session);
  t.equal(session.id, s.id);
  t.equal(session.status, 'ready');
  t.equal(session.model, 'local/echo');
  t.equal(session.realtime.url, `ws://127.0.0.1:8081/v1/realtime?session_id=${s.id}`);
  t.equal(session.billing.preauthorized_cents, s.preauthorizedCents);
  t.equal(session.billing.reserved_cents, s.preauthorizedCents);
  t.equal(session.usage.audio_in_ms, 0);
  t.equal(conversation.type, 'conversation.created');
  t.same(Object.keys(conversation).sort(), ['conversation', 'event_id', 'type']);
  t.match(conversation.conversation, { object: 'realtime.conversation', id: /^conv_/ });

  const { rows } = await db.pool.query<{ relay_id: string; id: string; transport: string; dialect: string }>(
    'SELECT id, relay_id, transport, dialect FROM session_attachments WHERE session_id = $1',
    [s.id],
  );
  t.equal(rows.length, 1);
  t.match(rows[0]?.id, /^att_/);
  t.equal(rows[0]?.relay_id, env.config.RELAY_ID);
  t.same([rows[0]?.transport, rows[0]?.dialect], ['websocket', 'svc-realtime-v1'], 'what carries it, for the operator');
  const attachedRow = await sessionRow(db, s.id);
  t.equal(attachedRow?.status, 'ready', 'attaching alone does not activate');
  t.ok((attachedRow?.last_activity_at.getTime() ?? 0) > (before?.last_activity_at.getTime() ?? Infinity), 'attach is activity');
  t.equal(session.expires_at, Math.floor((attachedRow?.last_activity_at.getTime() ?? 0) / 1000) + 300, 'expires_at moved with it');

  const frame = tone(20);
  client.append(frame, 'a1');
  const delta = await client.next('response.output_audio.delta');
  t.equal(delta.audio, frame.toString('base64'), 'echoed untouched');
  const row = await sessionRow(db, s.id);
  t.equal(row?.status, 'active', 'a read right after the first reply shows active');
  t.ok(row?.activated_at);
});

t.test('the legacy alias creates, attaches with Deprecation: true, and ends the session on close', async (t) => {
  const env = await setupRelay(t);
  const { db } = env;
  await createModel(db, { id: 'local/echo', providerModel: 'echo-stream' });
  await createModel(db, { id: 'local/hidden', providerModel: 'echo-stream', approved: false });
  const key = await createKey(db, 10_000);
  const poor = await createKey(db, 0);

  const r404 = await refused(`${env.url}?model=local/hidden`, { secret: key.secret });
  t.equal(r404.status, 404);
  t.equal(r404.body.error.code, 'model_not_found');
  const r402 = await refused(`${env.url}?model=local/echo`, { secret: poor.secret });
  t.equal(r402.status, 402);
  t.equal(r402.body.error.code, 'insufficient_wallet_balance');
  t.equal(r402.body.error.type, 'billing_error');
  const r401 = await refused(`${env.url}?model=local/echo`, { secret: `vr_sk_${'y'.repeat(40)}` });
  t.equal(r401.status, 401);
  const both = await refused(`${env.url}?model=local/echo&session_id=vs_x`, { secret: key.secret });
  t.equal(both.status, 400);
  t.equal(await countRows(db, 'voice_sessions'), 0, 'refusals created nothing');

  const { client, created } = await attach(`${env.url}?model=local/echo`, key.secret);
  t.equal(client.headers['deprecation'], 'true');
  const session = VoiceSession.parse(created.session);
  t.equal(session.model, 'local/echo');
  t.equal(session.status, 'ready');
  const { rows } = await db.pool.query<{ legacy: boolean; preauthorized_cents: number }>(
    'SELECT legacy, preauthorized_cents FROM voice_sessions WHERE id = $1',
    [session.id],
  );
  t.equal(rows[0]?.legacy, true);
  t.equal((await walletOf(db, key.walletId)).reserved, rows[0]?.preauthorized_cents, 'reserved like POST /v1/voice/sessions');

  client.append(tone(20));
  await client.next('response.output_audio.delta');
  await client.close();
  const row = await eventually(
    () => sessionRow(db, session.id),
    (r) => r?.end_cause != null,
  );
  t.equal(row?.end_cause, 'client_closed');
  t.equal(row?.terminal_status, 'completed');
  const finals = await eventually(
    () => env.checkpoints.filter((c) => c.session_id === session.id && c.final),
    (c) => c.length > 0,
  );
  t.equal(finals.length, 1);
  t.equal(finals[0]?.audio_in_ms, 20);
  t.equal(finals[0]?.audio_out_ms, 20);
});
