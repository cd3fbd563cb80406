// Attaching with an ephemeral client secret, subprotocol negotiation and the Origin allow-list, before the
// upgrade (decisions.md, "Ephemeral client secrets (browsers)", "The legacy path").
import t, { type Test } from 'tap';
import { REALTIME_PROTOCOL, type RealtimeSessionSettings } from '@s2s/contract';
import { mintClientSecret } from '@s2s/sessions';
import WebSocket from 'ws';
import {
  Client,
  attachUrl,
  browserSession,
  countRows,
  createKey,
  createModel,
  eventually,
  newSession,
  sessionRow,
  setupRelay,
  type Refusal,
} from './helpers.js';
import type { DbHandle } from '@s2s/db';

const MODEL = 'test/secret-1';

interface Opened {
  ws: WebSocket;
  client: Client;
  headers: Record<string, string | string[] | undefined>;
}

/** Opens a socket with these subprotocols and headers: the open socket, or the refusal's answer. */
function connect(url: string, protocols: string[], headers: Record<string, string> = {}): Promise<Opened | Refusal> {
  const ws = new WebSocket(url, protocols, { headers, perMessageDeflate: false });
  const client = new Client(ws);
  return new Promise((resolve, reject) => {
    let upgradeHeaders: Record<string, string | string[] | undefined> = {};
    ws.once('upgrade', (res) => (upgradeHeaders = res.headers));
    ws.once('open', () => resolve({ ws, client, headers: upgradeHeaders }));
    ws.once('error', (err) => reject(err));
    ws.once('unexpected-response', (_req, res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (text += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: JSON.parse(text) }));
    });
  });
}

async function opened(t: Test, p: Promise<Opened | Refusal>, name: string): Promise<Opened> {
  const r = await p;
  if (!('ws' in r)) throw new Error(`${name}: refused ${r.status} ${JSON.stringify(r.body)}`);
  t.teardown(() => r.ws.terminate());
  const created = await r.client.next();
  t.equal(created.type, 'session.created', `${name}: session.created`);
  t.equal((await r.client.next()).type, 'conversation.created', `${name}: conversation.created`);
  return r;
}

async function refusal(p: Promise<Opened | Refusal>): Promise<Refusal> {
  const r = await p;
  if ('ws' in r) {
    r.ws.terminate();
    throw new Error('the upgrade was accepted');
  }
  return r;
}

async function secretFor(db: DbHandle, sessionId: string, opts: { ageSeconds?: number; ttlSeconds?: number } = {}) {
  const now = new Date(Date.now() - (opts.ageSeconds ?? 0) * 1000);
  return (await mintClientSecret({ ctx: { db }, input: { sessionId, ttlSeconds: opts.ttlSeconds ?? 60, now } })).value;
}

t.test('the three ways of presenting a secret attach its session; the secret is never echoed', async (t) => {
  const env = await setupRelay(t);
  await createModel(env.db, { id: MODEL });
  const key = await createKey(env.db, 1000);
  const ways: [string, (ek: string) => [string[], Record<string, string>]][] = [
    ['Authorization: Bearer ek_', (ek) => [[REALTIME_PROTOCOL], { Authorization: `Bearer ${ek}` }]],
    ['svc-realtime-v1.auth.ek_', (ek) => [[REALTIME_PROTOCOL, `svc-realtime-v1.auth.${ek}`], {}]],
    ['openai-insecure-api-key.ek_', (ek) => [[`openai-insecure-api-key.${ek}`, REALTIME_PROTOCOL, 'openai-beta.realtime-v1'], {}]],
  ];
  for (const [name, present] of ways) {
    const session = await newSession(env.db, key, MODEL);
    const ek = await secretFor(env.db, session.id);
    const [protocols, headers] = present(ek);
    const o = await opened(t, connect(attachUrl(env.url, session.id), protocols, headers), name);
    t.equal(o.ws.protocol, REALTIME_PROTOCOL, `${name}: svc-realtime-v1 selected`);
    t.equal(o.headers['sec-websocket-protocol'], REALTIME_PROTOCOL, `${name}: only that is echoed`);
    t.equal(o.headers['deprecation'], undefined, `${name}: the canonical path is not deprecated`);
    o.ws.close();
  }
});

t.test(
  'refusals: expired, another session, unknown, an API key in a subprotocol, the canonical path without svc-realtime-v1',
  async (t) => {
    const env = await setupRelay(t);
    await createModel(env.db, { id: MODEL });
    const key = await createKey(env.db, 1000);
    const session = await newSession(env.db, key, MODEL);
    const other = await newSession(env.db, key, MODEL);
    const url = attachUrl(env.url, session.id);

    const expired = await secretFor(env.db, session.id, { ageSeconds: 61, ttlSeconds: 60 });
    let r = await refusal(connect(url, [REALTIME_PROTOCOL], { Authorization: `Bearer ${expired}` }));
    t.match(r, { status: 401, body: { error: { code: 'invalid_client_secret', type: 'authentication_error' } } }, 'expired');

    const othersSecret = await secretFor(env.db, other.id);
    r = await refusal(connect(url, [REALTIME_PROTOCOL, `svc-realtime-v1.auth.${othersSecret}`]));
    t.match(r, { status: 401, body: { error: { code: 'invalid_client_secret' } } }, "another session's secret");

    r = await refusal(connect(url, [REALTIME_PROTOCOL], { Authorization: `Bearer ek_${'A'.repeat(40)}` }));
    t.match(r, { status: 401, body: { error: { code: 'invalid_client_secret' } } }, 'unknown secret');

    r = await refusal(connect(url, [REALTIME_PROTOCOL, `openai-insecure-api-key.${key.secret}`]));
    t.match(r, { status: 401, body: { error: { code: 'invalid_vr_sk', message: /subprotocol/ } } }, 'API key in a subprotocol');
    r = await refusal(connect(`${env.url}?model=${MODEL}`, ['realtime', `openai-insecure-api-key.${key.secret}`]));
    t.equal(r.status, 401, 'API key in a subprotocol on the legacy path');
    r = await refusal(connect(`${env.url}?model=${MODEL}`, [REALTIME_PROTOCOL, `svc-realtime-v1.auth.${key.secret}`]));
    t.equal(r.status, 401, 'API key in the svc auth subprotocol');
    t.equal(await countRows(env.db, 'voice_sessions'), 2, 'nothing created');

    const ek = await secretFor(env.db, session.id);
    r = await refusal(connect(url, [`svc-realtime-v1.auth.${ek}`]));
    t.match(r, { status: 400, body: { error: { code: 'invalid_request', message: /svc-realtime-v1 subprotocol is required/ } } });
    t.equal(await countRows(env.db, 'session_attachments'), 0, 'no attachment from any refusal');
    t.equal((await sessionRow(env.db, session.id))!.status, 'ready');
  },
);

t.test('the legacy path with a secret attaches the minted session and creates nothing; the model must match', async (t) => {
  const env = await setupRelay(t);
  await createModel(env.db, { id: MODEL });
  await createModel(env.db, { id: 'test/other-1' });
  const key = await createKey(env.db, 1000);
  const session = await browserSession(env.db, key, MODEL);
  const ek = await secretFor(env.db, session.id);

  const wrong = await refusal(connect(`${env.url}?model=test/other-1`, [REALTIME_PROTOCOL], { Authorization: `Bearer ${ek}` }));
  t.match(wrong, { status: 400, body: { error: { code: 'invalid_request', message: /model/ } } });

  const o = await opened(t, connect(`${env.url}?model=${MODEL}`, [REALTIME_PROTOCOL, `svc-realtime-v1.auth.${ek}`]), 'legacy');
  t.equal(o.headers['deprecation'], 'true', 'the legacy path says it is deprecated');
  t.equal(await countRows(env.db, 'voice_sessions'), 1, 'no new session');

  // Sessions from POST /v1/realtime/client_secrets end with their socket.
  o.ws.close();
  const row = await eventually(
    () => sessionRow(env.db, session.id),
    (r) => r?.end_cause === 'client_closed',
  );
  t.equal(row?.end_cause, 'client_closed', 'ended when the socket closed');
});

t.test('an attachment made in time lasts; the expired secret attaches nothing more', async (t) => {
  const env = await setupRelay(t);
  await createModel(env.db, { id: MODEL });
  const key = await createKey(env.db, 1000);
  const session = await newSession(env.db, key, MODEL);
  const ek = await secretFor(env.db, session.id, { ageSeconds: 57, ttlSeconds: 60 });
  const o = await opened(t, connect(attachUrl(env.url, session.id), [REALTIME_PROTOCOL], { Authorization: `Bearer ${ek}` }), 'in time');
  const expired = await eventually(
    async () => (await env.db.pool.query('SELECT 1 FROM client_secrets WHERE expires_at < now()')).rowCount,
    (n) => n === 1,
  );
  t.equal(expired, 1, 'the secret has expired');
  o.ws.send(JSON.stringify({ type: 'input_audio_buffer.commit', event_id: 'c1' }));
  const answer = await o.client.next();
  t.match(answer, { type: 'error', error: { code: 'input_audio_buffer_commit_empty', event_id: 'c1' } }, 'still served');
  t.equal(o.ws.readyState, WebSocket.OPEN, 'still open');
  const again = await refusal(connect(attachUrl(env.url, session.id), [REALTIME_PROTOCOL], { Authorization: `Bearer ${ek}` }));
  t.equal(again.status, 401, 'a new attach with it is refused');
  t.equal((await sessionRow(env.db, session.id))!.end_requested_at, null, 'a canonical session keeps its rules');
});

t.test('REALTIME_ALLOWED_ORIGINS: another Origin is refused with 403 before anything; a listed one and none pass', async (t) => {
  const env = await setupRelay(t, { REALTIME_ALLOWED_ORIGINS: 'https://app.example.com' });
  await createModel(env.db, { id: MODEL });
  const key = await createKey(env.db, 1000);
  const session = await newSession(env.db, key, MODEL);
  const ek = await secretFor(env.db, session.id);
  const url = attachUrl(env.url, session.id);
  const r = await refusal(connect(url, [REALTIME_PROTOCOL], { Authorization: `Bearer ${ek}`, Origin: 'https://evil.example.net' }));
  t.match(r, { status: 403, body: { error: { code: 'origin_not_allowed', type: 'permission_error' } } });
  t.equal(r.body.error.request_id, r.headers['x-request-id']);
  const legacy = await refusal(
    connect(`${env.url}?model=${MODEL}`, [REALTIME_PROTOCOL], { Authorization: `Bearer ${key.secret}`, Origin: 'null' }),
  );
  t.equal(legacy.status, 403, 'an opaque origin too');
  t.equal(await countRows(env.db, 'voice_sessions'), 1, 'nothing created');

  const ok = await opened(
    t,
    connect(url, [REALTIME_PROTOCOL], { Authorization: `Bearer ${ek}`, Origin: 'https://app.example.com' }),
    'listed',
  );
  ok.ws.close();
  const none = await opened(t, connect(url, [REALTIME_PROTOCOL], { Authorization: `Bearer ${key.secret}` }), 'no Origin');
  none.ws.close();
});

t.test('unset REALTIME_ALLOWED_ORIGINS: any Origin passes', async (t) => {
  const env = await setupRelay(t);
  await createModel(env.db, { id: MODEL });
  const key = await createKey(env.db, 1000);
  const session = await newSession(env.db, key, MODEL);
  const ek = await secretFor(env.db, session.id);
  const o = await opened(
    t,
    connect(attachUrl(env.url, session.id), [REALTIME_PROTOCOL], { Authorization: `Bearer ${ek}`, Origin: 'https://anywhere.example' }),
    'any',
  );
  o.ws.close();
});

t.test("a secret's current OpenAI session fields: applied at attach as the model's provider honours them", async (t) => {
  const env = await setupRelay(t);
  await createModel(env.db, { id: MODEL });
  const key = await createKey(env.db, 1000);
  /** The OpenAI-dialect events of the secret's session: session.created and what follows at once. */
  const firstEvents = async (settings: RealtimeSessionSettings, createdOn = 'local'): Promise<Record<string, any>[]> => {
    await env.db.pool.query('UPDATE catalog_models SET provider = $2 WHERE id = $1', [MODEL, createdOn]);
    const session = await browserSession(env.db, key, MODEL, settings);
    await env.db.pool.query("UPDATE catalog_models SET provider = 'local' WHERE id = $1", [MODEL]);
    const ek = await secretFor(env.db, session.id);
    const ws = new WebSocket(`${env.url}?model=${MODEL}`, ['realtime', `openai-insecure-api-key.${ek}`]);
    const events: Record<string, any>[] = [];
    await new Promise<void>((resolve, reject) => {
      ws.on('message', (d) => {
        events.push(JSON.parse(d.toString()) as Record<string, any>);
        // A refusal of the kept settings follows session.created at once.
        if (events.at(-1)!.type === 'session.created') setTimeout(resolve, 300);
      });
      ws.once('error', reject);
    });
    ws.close();
    return events;
  };
  // The simulator (provider local) honours neither reasoning nor truncation: the creation refuses reasoning
  // (services/control-plane/test/client-secrets.test.ts); the attach refuses it too, here for a secret created
  // while the model was served by a provider that honours it.
  await t.rejects(browserSession(env.db, key, MODEL, { reasoning: { effort: 'high' } }), {
    code: 'invalid_request',
    message: /session\.reasoning/,
  });
  const refused = await firstEvents({ reasoning: { effort: 'high' }, truncation: 'auto' }, 'openai');
  t.same(
    refused.map((e) => e.type),
    ['session.created', 'conversation.created', 'error'],
  );
  t.match(refused[2], { type: 'error', error: { code: 'unsupported_parameter', param: 'session.reasoning' } }, 'reasoning refused, named');
  t.notOk('reasoning' in refused[0]!.session, 'the defaults stay');
  const hinted = await firstEvents({ truncation: { type: 'retention_ratio', retention_ratio: 0.5 }, parallel_tool_calls: true });
  t.same(
    hinted.map((e) => e.type),
    ['session.created', 'conversation.created'],
    'hints are accepted',
  );
  t.match(hinted[0]!.session, { truncation: 'disabled', parallel_tool_calls: false, include: [] }, 'reported as what takes effect');
});
