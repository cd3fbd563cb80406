// Issue 8, item 5: the legacy `/v1/realtime?model=` path creates through the same verb as
// POST /v1/voice/sessions, so a key over its limits is refused before the upgrade with 429 and Retry-After.
import t from 'tap';
import { ErrorResponse } from '@s2s/contract';
import { attach, countRows, createKey, createModel, refused, setupRelay, walletOf } from './helpers.js';

t.test('legacy path over max_live_sessions: 429 rate_limit_exceeded with Retry-After, nothing reserved', async (t) => {
  const env = await setupRelay(t, { KEY_MAX_LIVE_SESSIONS: '1', KEY_MAX_CREATES_PER_MINUTE: '1000' });
  const { db } = env;
  await createModel(db, { id: 'local/echo', providerModel: 'echo-stream' });
  const key = await createKey(db, 10_000);
  const { client } = await attach(`${env.url}?model=local/echo`, key.secret);
  const reservedBefore = (await walletOf(db, key.walletId)).reserved;

  const res = await refused(`${env.url}?model=local/echo`, { secret: key.secret });
  t.equal(res.status, 429);
  t.ok(ErrorResponse.safeParse(res.body).success, 'ErrorResponse');
  t.same([res.body.error.code, res.body.error.type], ['rate_limit_exceeded', 'rate_limit_error']);
  t.match(res.body.error.message, /max_live_sessions/);
  t.match(res.headers['retry-after'], /^[1-9][0-9]*$/, 'Retry-After in whole seconds');
  t.equal(res.body.error.request_id, res.headers['x-request-id']);
  t.equal(await countRows(db, 'voice_sessions'), 1, 'no second session');
  t.equal((await walletOf(db, key.walletId)).reserved, reservedBefore, 'nothing more reserved');

  const own = await createKey(db, 10_000);
  await db.pool.query('UPDATE api_keys SET max_live_sessions = 2 WHERE id = $1', [own.keyId]);
  const a = await attach(`${env.url}?model=local/echo`, own.secret);
  const b = await attach(`${env.url}?model=local/echo`, own.secret);
  t.equal((await refused(`${env.url}?model=local/echo`, { secret: own.secret })).status, 429, "a key's own limit applies");
  await Promise.all([client.close(), a.client.close(), b.client.close()]);
});

t.test('legacy path over max_creates_per_minute: 429 with Retry-After', async (t) => {
  const env = await setupRelay(t, { KEY_MAX_CREATES_PER_MINUTE: '1' });
  const { db } = env;
  await createModel(db, { id: 'local/echo', providerModel: 'echo-stream' });
  const key = await createKey(db, 10_000);
  const { client } = await attach(`${env.url}?model=local/echo`, key.secret);
  const res = await refused(`${env.url}?model=local/echo`, { secret: key.secret });
  t.same([res.status, res.body.error.code], [429, 'rate_limit_exceeded']);
  t.match(res.body.error.message, /max_creates_per_minute/);
  const retryAfter = Number(res.headers['retry-after']);
  t.ok(retryAfter >= 1 && retryAfter <= 60, `Retry-After ${retryAfter} s is at most a minute`);
  t.equal(await countRows(db, 'voice_sessions'), 1);
  await client.close();
});
