// The web console's routes on the control plane: its static files (strict headers, no secret) and the
// playground backend, which mints an `ek_` secret with the key the operator picked (admin token only).
import t from 'tap';
import { PlaygroundSecret } from '@s2s/contract';
import { consoleBuilt } from '@s2s/console';
import { ECHO_PREAUTH_CENTS, REALTIME_BASE, adminHeaders, api, bearer, createKey, startControlPlane, walletRow } from './helpers.js';

const MINT = '/console/api/playground/client_secrets';

t.test('playground backend', async (t) => {
  const h = await startControlPlane(t);
  const payer = await createKey(h, 1000);

  await t.test('mints a secret for a session of the chosen key; the key itself is never in the answer', async (t) => {
    const res = await api(h, 'POST', MINT, {
      headers: adminHeaders,
      json: { key_id: payer.id, model: 'local/echo-1', instructions: 'Be brief.', voice: 'marin' },
    });
    t.equal(res.status, 200, res.text);
    const minted = PlaygroundSecret.parse(res.body);
    t.match(minted.value, /^ek_[A-Za-z0-9]{40}$/);
    t.equal(minted.realtime_url, REALTIME_BASE);
    t.notMatch(res.text, /vr_sk_/, 'no API key in the answer');
    const session = await h.db.pool.query<{ key_id: string; initial_settings: unknown }>(
      'SELECT key_id, initial_settings FROM voice_sessions WHERE id = $1',
      [minted.session_id],
    );
    t.equal(session.rows[0]?.key_id, payer.id, 'the session belongs to the chosen key');
    t.match(session.rows[0]?.initial_settings, {
      instructions: 'Be brief.',
      audio: { output: { voice: 'marin' }, input: { transcription: {} } },
    });
    t.equal((await walletRow(h, payer.wallet_id)).reserved, ECHO_PREAUTH_CENTS, 'preauthorized like any session');
  });

  await t.test('refusals', async (t) => {
    const body = { key_id: payer.id, model: 'local/echo-1' };
    t.equal((await api(h, 'POST', MINT, { json: body })).body?.error?.code, 'invalid_admin_token', 'no admin token: 401');
    const withKey = await api(h, 'POST', MINT, { headers: bearer(payer.key), json: body });
    t.equal(withKey.status, 401, 'an API key is not the admin token');
    const unknown = await api(h, 'POST', MINT, { headers: adminHeaders, json: { ...body, key_id: 'key_doesnotexist' } });
    t.equal(unknown.body?.error?.code, 'key_not_found');
    const badModel = await api(h, 'POST', MINT, { headers: adminHeaders, json: { ...body, model: 'nobody/none-1' } });
    t.equal(badModel.status, 404);
    const extra = await api(h, 'POST', MINT, { headers: adminHeaders, json: { ...body, balance_cents: 5 } });
    t.equal(extra.body?.error?.code, 'invalid_request', 'unknown fields refused');
    await api(h, 'POST', `/admin/v1/keys/${payer.id}/revoke`, { headers: adminHeaders });
    const revoked = await api(h, 'POST', MINT, { headers: adminHeaders, json: body });
    t.equal(revoked.body?.error?.code, 'invalid_vr_sk', 'a revoked key mints nothing');
    t.equal((await api(h, 'GET', '/console/api/nothing', { headers: adminHeaders })).status, 404);
  });
});

t.test('static console', { skip: consoleBuilt() ? false : 'console not built (node scripts/bootstrap.mjs builds it)' }, async (t) => {
  const h = await startControlPlane(t);
  const page = await api(h, 'GET', '/console/');
  t.equal(page.status, 200);
  t.match(page.headers.get('content-type'), /text\/html/);
  t.match(page.headers.get('content-security-policy'), /default-src 'none'.*script-src 'self'/);
  const connect = /connect-src ([^;]*)/.exec(page.headers.get('content-security-policy') ?? '')?.[1];
  const realtime = new URL(REALTIME_BASE);
  t.equal(
    connect,
    `'self' ${realtime.origin} ${realtime.origin.replace(/^ws/, 'http')}`,
    'sockets to the realtime origin and HTTP to its host (WebRTC offers) only, not to any ws: host',
  );
  t.equal(page.headers.get('cache-control'), 'no-store');
  t.notOk(page.text.includes(h.config.ADMIN_TOKEN), 'no admin token in the page source');
  t.match(page.text, /<script type="module" src="\.\/app\.js">/);
  t.equal((await api(h, 'GET', '/console/app.js')).status, 200);
  t.equal((await api(h, 'GET', '/console/worklet.js')).status, 200);
  t.equal((await api(h, 'GET', '/console/.source-digest')).status, 404, 'dotfiles are not served');
  const bare = await fetch(`${h.url}/console`, { redirect: 'manual' });
  t.equal(bare.status, 301);
  t.equal(bare.headers.get('location'), '/console/');
});
