import t from 'tap';
import type { Test } from 'tap';
import { AdminKeyList, AdminModelList, AdminSessionList, ApiKeyResource, LedgerEntryList } from '@s2s/contract';
import { usageOf } from '@s2s/core';
import { adminHeaders, api, bearer, createKey, createSession, startControlPlane, type Harness } from './helpers.js';

/** Every page of a list, following next_cursor; checks each page's shape and size. */
async function allPages(t: Test, h: Harness, path: string, limit: number, schema: { safeParse(v: unknown): { success: boolean } }) {
  const ids: string[] = [];
  let after: string | null = null;
  for (let pages = 0; pages < 50; pages++) {
    const sep = path.includes('?') ? '&' : '?';
    const res: { status: number; body: any } = await api(h, 'GET', `${path}${sep}limit=${limit}${after ? `&after=${after}` : ''}`, {
      headers: adminHeaders,
    });
    t.equal(res.status, 200, `${path} page ${pages}`);
    t.ok(schema.safeParse(res.body).success, 'exact list shape');
    t.ok(res.body.data.length <= limit);
    ids.push(...res.body.data.map((d: { id: string }) => d.id));
    t.equal(res.body.has_more, res.body.next_cursor !== null);
    if (!res.body.has_more) return ids;
    after = res.body.next_cursor;
  }
  throw new Error('too many pages');
}

t.test('GET /admin/v1/keys pages newest first and filters by wallet and revocation', async (t) => {
  const h = await startControlPlane(t);
  const made = [];
  for (let i = 0; i < 7; i++) made.push(await createKey(h, 100 * i));
  await api(h, 'POST', `/admin/v1/keys/${made[2]!.id}/revoke`, { headers: adminHeaders });
  await api(h, 'POST', `/admin/v1/keys/${made[5]!.id}/revoke`, { headers: adminHeaders });

  const ids = await allPages(t, h, '/admin/v1/keys', 3, AdminKeyList);
  t.same(ids, made.map((k) => k.id).reverse(), 'every key once, newest first, across pages');

  const revoked = await api(h, 'GET', '/admin/v1/keys?revoked=true', { headers: adminHeaders });
  t.same(
    revoked.body.data.map((k: ApiKeyResource) => k.id),
    [made[5]!.id, made[2]!.id],
  );
  const live = await api(h, 'GET', '/admin/v1/keys?revoked=false&limit=100', { headers: adminHeaders });
  t.equal(live.body.data.length, 5);
  t.notOk(live.body.has_more);
  t.equal(live.body.next_cursor, null);

  const byWallet = await api(h, 'GET', `/admin/v1/keys?wallet_id=${made[4]!.wallet_id}`, { headers: adminHeaders });
  t.equal(byWallet.body.data.length, 1);
  const one = byWallet.body.data[0] as ApiKeyResource;
  t.equal(one.id, made[4]!.id);
  t.equal(one.prefix, made[4]!.key.slice(0, 10), 'the display prefix, never the secret');
  t.notOk(JSON.stringify(live.body).includes(made[4]!.key), 'no secret in any answer');
  t.ok(Math.abs(one.created_at - Date.now() / 1000) < 120, 'created_at in unix seconds');

  const single = await api(h, 'GET', `/admin/v1/keys/${made[4]!.id}`, { headers: adminHeaders });
  t.same(single.body, one, 'the list and the single GET answer the same resource');
});

t.test('GET /admin/v1/models lists approved and unapproved models, filtered', async (t) => {
  const h = await startControlPlane(t, { seed: true });
  const base = {
    display_name: 'Hidden',
    owned_by: 'ops',
    provider: 'local',
    provider_model: 'echo',
    enabled: true,
    pricing: { per_minute: 1, audio_in_token: 0, audio_out_token: 0, relay_fee_milli_cents: 0 },
  };
  for (const [id, approved, enabled] of [
    ['zz/unapproved', false, true],
    ['zz/disabled', true, false],
  ] as const) {
    const res = await api(h, 'PUT', '/admin/v1/models', { headers: adminHeaders, json: { ...base, id, approved, enabled } });
    t.equal(res.status, 200, id);
  }
  const publicIds = (await api(h, 'GET', '/v1/models')).body.data.map((m: { id: string }) => m.id);
  t.notOk(publicIds.includes('zz/unapproved'), 'the public catalog omits it');

  const ids = await allPages(t, h, '/admin/v1/models', 2, AdminModelList);
  t.same(ids, [...ids].sort(), 'ordered by id');
  for (const id of [...publicIds, 'zz/unapproved', 'zz/disabled']) t.ok(ids.includes(id), `${id} listed for the operator`);
  t.equal(new Set(ids).size, ids.length, 'no model twice');

  const unapproved = await api(h, 'GET', '/admin/v1/models?approved=false', { headers: adminHeaders });
  const unapprovedIds = unapproved.body.data.map((m: { id: string }) => m.id);
  t.ok(unapprovedIds.includes('zz/unapproved'));
  t.ok(
    unapproved.body.data.every((m: { approved: boolean }) => !m.approved),
    'only unapproved ones',
  );
  t.notOk(
    unapprovedIds.some((id: string) => publicIds.includes(id)),
    'none of them public',
  );
  t.equal(unapproved.body.data.find((m: { id: string }) => m.id === 'zz/unapproved').provider, 'local', 'routing is shown to the operator');
  const disabled = await api(h, 'GET', '/admin/v1/models?enabled=false&provider=local', { headers: adminHeaders });
  t.same(
    disabled.body.data.map((m: { id: string }) => m.id),
    ['zz/disabled'],
  );
  const none = await api(h, 'GET', '/admin/v1/models?provider=nobody', { headers: adminHeaders });
  t.same(none.body, { object: 'list', data: [], has_more: false, next_cursor: null });
});

t.test('GET /admin/v1/wallets/{id}/ledger pages credits and charges, newest first', async (t) => {
  const h = await startControlPlane(t, { seed: true });
  const key = await createKey(h, 1000);
  for (const amount of [5, 6, 7, 8]) {
    const res = await api(h, 'POST', `/admin/v1/wallets/${key.wallet_id}/credit`, {
      headers: adminHeaders,
      json: { amount_cents: amount },
    });
    t.equal(res.status, 200);
  }
  const ids = await allPages(t, h, `/admin/v1/wallets/${key.wallet_id}/ledger`, 2, LedgerEntryList);
  t.equal(ids.length, 5, 'the opening credit and four more');
  const all = await api(h, 'GET', `/admin/v1/wallets/${key.wallet_id}/ledger?limit=10`, { headers: adminHeaders });
  t.same(
    all.body.data.map((e: { amount_cents: number; kind: string }) => [e.kind, e.amount_cents]),
    [
      ['credit', 8],
      ['credit', 7],
      ['credit', 6],
      ['credit', 5],
      ['credit', 1000],
    ],
  );
  const charges = await api(h, 'GET', `/admin/v1/wallets/${key.wallet_id}/ledger?kind=charge`, { headers: adminHeaders });
  t.same(charges.body.data, [], 'no charge before a session settles');

  const missing = await api(h, 'GET', '/admin/v1/wallets/wal_nope/ledger', { headers: adminHeaders });
  t.equal(missing.status, 404);
  t.equal(missing.body.error.code, 'wallet_not_found');
});

t.test('GET /admin/v1/sessions pages the sessions of every key and filters by key, wallet, model and status', async (t) => {
  const h = await startControlPlane(t, { seed: true });
  const a = await createKey(h, 10_000);
  const b = await createKey(h, 10_000);
  const made: string[] = [];
  for (const key of [a, b, a, a, b]) {
    const res = await createSession(h, key.key);
    t.equal(res.status, 201);
    made.push(res.body.id);
  }
  const ended = await api(h, 'POST', `/v1/voice/sessions/${made[2]}/end`, { headers: bearer(a.key), json: {} });
  t.ok([200, 409, 503].includes(ended.status), 'end requested');

  const ids = await allPages(t, h, '/admin/v1/sessions', 2, AdminSessionList);
  t.same(ids, [...made].reverse(), 'every session once, newest first');

  const ofA = await api(h, 'GET', `/admin/v1/sessions?key_id=${a.id}`, { headers: adminHeaders });
  t.same(
    ofA.body.data.map((s: { id: string }) => s.id),
    [made[3], made[2], made[0]],
  );
  t.ok(
    ofA.body.data.every((s: { key_id: string; wallet_id: string }) => s.key_id === a.id && s.wallet_id === a.wallet_id),
    'owner shown',
  );
  const single = await api(h, 'GET', `/v1/voice/sessions/${made[0]}`, { headers: bearer(a.key) });
  const listed = ofA.body.data.find((s: { id: string }) => s.id === made[0]);
  const { key_id: _k, wallet_id: _w, transport, dialect, ...resource } = listed;
  t.same(resource, single.body, 'the same resource its owner reads');
  t.same([transport, dialect], [null, null], 'never attached: no transport');

  const ofB = await api(h, 'GET', `/admin/v1/sessions?wallet_id=${b.wallet_id}&model=local/echo-1`, { headers: adminHeaders });
  t.same(
    ofB.body.data.map((s: { id: string }) => s.id),
    [made[4], made[1]],
  );
  const ready = await api(h, 'GET', `/admin/v1/sessions?status=ready&key_id=${a.id}`, { headers: adminHeaders });
  t.ok(
    ready.body.data.every((s: { status: string }) => s.status === 'ready'),
    'only ready ones',
  );
  const otherModel = await api(h, 'GET', '/admin/v1/sessions?model=nobody/none', { headers: adminHeaders });
  t.same(otherModel.body.data, []);
  const badStatus = await api(h, 'GET', '/admin/v1/sessions?status=done', { headers: adminHeaders });
  t.equal(badStatus.status, 400);
  t.match(badStatus.body.error.message, /status/);
  const badCursor = await api(h, 'GET', `/admin/v1/sessions?after=${Buffer.from('["x","y"]').toString('base64url')}`, {
    headers: adminHeaders,
  });
  t.equal(badCursor.status, 400);
});

t.test('GET /admin/v1/sessions: usage, activity and routes as the owner reads them; the transport of the newest attachment', async (t) => {
  const h = await startControlPlane(t, { seed: true });
  const key = await createKey(h, 10_000);
  const ids: string[] = [];
  for (let i = 0; i < 4; i++) ids.push((await createSession(h, key.key)).body.id);
  const [socket, phone, call, settled] = ids as [string, string, string, string];
  const route = (ms: number) => [{ provider: 'local', provider_model: 'echo-1', ...usageOf({ audio_in_ms: ms, audio_out_ms: ms }) }];
  const attach = (id: string, session: string, transport: string, dialect: string | null, ms: number, startedAgoMs: number) =>
    h.db.pool.query(
      `INSERT INTO session_attachments (id, session_id, relay_id, transport, dialect, audio_in_ms, audio_out_ms, routes, started_at, last_audio_at)
       VALUES ($1, $2, 'relay-1', $3, $4, $5, $5, $6, now() - make_interval(secs => $7 / 1000.0), now())`,
      [id, session, transport, dialect, ms, JSON.stringify(route(ms)), startedAgoMs],
    );
  // A WebSocket session that reattached in the OpenAI dialect after a svc-realtime-v1 attachment.
  await attach('att_ws1', socket, 'websocket', 'svc-realtime-v1', 1000, 5000);
  await attach('att_ws2', socket, 'websocket', 'openai', 300, 1000);
  await attach('att_tw', phone, 'twilio', 'twilio', 700, 2000);
  await attach('att_rtc', call, 'webrtc', 'openai', 400, 2000);
  // Settled: the session row's figures, whatever its attachments hold; recorded before dialects were kept.
  await attach('att_old', settled, 'websocket', null, 900, 3000);
  await h.db.pool.query(
    `UPDATE voice_sessions SET settled_at = now(), status = 'completed', audio_in_ms = 250, audio_out_ms = 150, billed_cents = 3, reserved_cents = 0
      WHERE id = $1`,
    [settled],
  );
  await h.db.pool.query(
    `UPDATE wallets SET reserved_cents = reserved_cents - (SELECT preauthorized_cents FROM voice_sessions WHERE id = $1)
      WHERE id = $2`,
    [settled, key.wallet_id],
  );
  const page = await api(h, 'GET', `/admin/v1/sessions?key_id=${key.id}`, { headers: adminHeaders });
  t.equal(page.status, 200);
  t.ok(AdminSessionList.safeParse(page.body).success, 'exact list shape');
  const byId = new Map(page.body.data.map((s: { id: string }) => [s.id, s]));
  const expected = {
    [socket]: ['websocket', 'openai', 1300],
    [phone]: ['twilio', 'twilio', 700],
    [call]: ['webrtc', 'openai', 400],
    [settled]: ['websocket', null, 250],
  };
  for (const [id, [transport, dialect, audioInMs]] of Object.entries(expected)) {
    const listed = byId.get(id) as Record<string, any>;
    const { key_id: _k, wallet_id: _w, transport: shownTransport, dialect: shownDialect, ...resource } = listed;
    const single = await api(h, 'GET', `/v1/voice/sessions/${id}`, { headers: bearer(key.key) });
    t.same(resource, single.body, `${id}: the same resource its owner reads (usage, routes, expiry, balance)`);
    t.same([shownTransport, shownDialect], [transport, dialect], `${id}: the newest attachment's transport`);
    t.equal(listed.usage.audio_in_ms, audioInMs);
  }
  t.same(
    (byId.get(socket) as any).usage.routes,
    [{ provider: 'local', ...usageOf({ audio_in_ms: 1300, audio_out_ms: 1300 }) }],
    'routes summed',
  );
});

t.test('list refusals: unknown parameter, bad limit, foreign cursor, no admin token', async (t) => {
  const h = await startControlPlane(t);
  await createKey(h, 1);
  const cases: [string, RegExp][] = [
    ['/admin/v1/keys?revokd=true', /unknown parameter revokd/],
    ['/admin/v1/keys?limit=0', /limit/],
    ['/admin/v1/keys?limit=101', /limit/],
    ['/admin/v1/keys?limit=abc', /limit/],
    ['/admin/v1/keys?limit=1&limit=2', /limit/],
    ['/admin/v1/keys?revoked=yes', /revoked/],
    ['/admin/v1/keys?after=not-a-cursor', /after/],
    [`/admin/v1/keys?after=${Buffer.from('[1,2]').toString('base64url')}`, /after/],
    [`/admin/v1/keys?after=${Buffer.from('["x","y"]').toString('base64url')}`, /after/],
    [`/admin/v1/keys?after=${Buffer.from('["2026-13-45T99:00:00.000Z","y"]').toString('base64url')}`, /after/],
    [`/admin/v1/sessions?after=${Buffer.from('["2026-02-30T00:00:00.000Z","y"]').toString('base64url')}`, /after/],
    ['/admin/v1/models?after=%00', /after/],
    [`/admin/v1/wallets/wal_x/ledger?after=${Buffer.from('["x"]').toString('base64url')}`, /after/],
    ['/admin/v1/wallets/wal_x/ledger?kind=refund', /kind/],
  ];
  for (const [path, message] of cases) {
    const res = await api(h, 'GET', path, { headers: adminHeaders });
    t.equal(res.status, 400, path);
    t.equal(res.body.error?.code, 'invalid_request', path);
    t.match(res.body.error?.message, message, path);
  }
  for (const path of ['/admin/v1/keys', '/admin/v1/models', '/admin/v1/wallets/wal_x/ledger']) {
    const res = await api(h, 'GET', path);
    t.equal(res.status, 401, path);
    t.equal(res.body.error.code, 'invalid_admin_token');
  }
});
