// Ephemeral client secrets on the control plane (decisions.md, "Ephemeral client secrets (browsers)").
import t, { type Test } from 'tap';
import { ClientSecret, RealtimeClientSecretResponse } from '@s2s/contract';
import { hashApiKey } from '@s2s/core';
import {
  ECHO_PREAUTH_CENTS,
  adminHeaders,
  api,
  bearer,
  createKey,
  createSession,
  startControlPlane,
  walletRow,
  type ApiResponse,
  type Harness,
} from './helpers.js';

const BODY = Object.freeze({
  session: {
    type: 'realtime',
    model: 'local/echo-1',
    instructions: 'Be brief.',
    audio: {
      input: { format: { type: 'audio/pcm', rate: 24000 }, turn_detection: { type: 'server_vad', silence_duration_ms: 600 } },
      output: { format: { type: 'audio/pcm', rate: 24000 }, voice: 'marin' },
    },
    tracing: 'auto',
  },
});

function mint(h: Harness, key: string, body: unknown = BODY) {
  return api(h, 'POST', '/v1/realtime/client_secrets', { headers: bearer(key), json: body });
}

function expectError(t: Test, res: ApiResponse, status: number, code: string, name = code): void {
  t.equal(res.status, status, `${name}: status`);
  t.equal(res.body?.error?.code, code, `${name}: code`);
  t.equal(res.body?.error?.request_id, res.headers.get('x-request-id'), `${name}: request id`);
}

async function secretRows(h: Harness) {
  return (
    await h.db.pool.query<{ secret_hash: string; session_id: string; ttl: number }>(
      'SELECT secret_hash, session_id, extract(epoch FROM expires_at - created_at)::int AS ttl FROM client_secrets',
    )
  ).rows;
}

t.test(
  'POST /v1/realtime/client_secrets: a session created like POST /v1/voice/sessions, its settings kept, a hashed secret',
  async (t) => {
    const h = await startControlPlane(t);
    const key = await createKey(h, 1000);
    const before = Math.floor(Date.now() / 1000);
    const res = await mint(h, key.key);
    t.equal(res.status, 200);
    t.ok(RealtimeClientSecretResponse.safeParse(res.body).success, 'contract shape');
    t.match(res.body.value, /^ek_[0-9A-Za-z]{40}$/);
    t.ok(res.body.expires_at >= before + 60 && res.body.expires_at <= before + 61, 'default lifetime 60 s');
    t.match(res.body.session, { type: 'realtime', object: 'realtime.session', model: 'local/echo-1', instructions: 'Be brief.' });
    t.match(res.body.session.id, /^vs_/);

    const rows = await secretRows(h);
    t.equal(rows.length, 1);
    t.equal(rows[0]!.secret_hash, hashApiKey(res.body.value), 'only the hash is stored');
    t.equal(rows[0]!.session_id, res.body.session.id);
    const { rows: sessions } = await h.db.pool.query('SELECT status, ends_with_socket, legacy, initial_settings FROM voice_sessions');
    t.equal(sessions.length, 1);
    t.match(sessions[0], { status: 'ready', ends_with_socket: true, legacy: false });
    const { type: _type, model: _model, ...settings } = BODY.session;
    t.same(sessions[0].initial_settings, settings, 'settings kept for the relay, without type and model');
    t.same(await walletRow(h, key.wallet_id), { balance: 1000, reserved: ECHO_PREAUTH_CENTS }, 'preauthorized like a create');
    t.notOk(h.logLines.join('').includes(res.body.value), 'the secret is never logged');

    const get = await api(h, 'GET', `/v1/voice/sessions/${res.body.session.id}`, { headers: bearer(key.key) });
    t.equal(get.status, 200, 'the session is an ordinary voice session of the key');
  },
);

t.test('expires_after: up to 600 s; outside 10..600 or another anchor is refused', async (t) => {
  const h = await startControlPlane(t);
  const key = await createKey(h, 10_000);
  const ok = await mint(h, key.key, { ...BODY, expires_after: { anchor: 'created_at', seconds: 600 } });
  t.equal(ok.status, 200);
  t.equal((await secretRows(h))[0]!.ttl, 600);
  for (const expires_after of [
    { anchor: 'created_at', seconds: 601 },
    { anchor: 'created_at', seconds: 5 },
    { anchor: 'now', seconds: 60 },
  ]) {
    const res = await mint(h, key.key, { ...BODY, expires_after });
    expectError(t, res, 400, 'invalid_request', JSON.stringify(expires_after));
    t.match(res.body.error.message, /expires_after/);
  }
});

t.test('unsupported settings are refused naming the param, and create nothing', async (t) => {
  const h = await startControlPlane(t);
  const key = await createKey(h, 1000);
  const cases: [string, unknown, RegExp][] = [
    // G.711 is offered since 9c545d8 (decisions.md, "Phone audio"); another rate is not.
    ['16 kHz input', { audio: { input: { format: { type: 'audio/pcm', rate: 16000 } } } }, /session\.audio\.input\.format\.rate/],
    ['16 kHz output', { audio: { output: { format: { type: 'audio/pcm', rate: 16000 } } } }, /session\.audio\.output\.format\.rate/],
    ['an MCP tool', { tools: [{ type: 'mcp', server_label: 'x' }] }, /session\.tools\.0/],
    ['an unknown field', { temperature: 0.7 }, /temperature/],
    ['a transcription session', { type: 'transcription' }, /session\.type: transcription sessions are not offered yet/],
    ['a bad reasoning effort', { reasoning: { effort: 'extreme' } }, /session\.reasoning\.effort/],
    ['a bad truncation', { truncation: { type: 'retention_ratio', retention_ratio: 2 } }, /session\.truncation/],
  ];
  for (const [name, extra, param] of cases) {
    const res = await mint(h, key.key, { session: { ...BODY.session, ...(extra as object) } });
    expectError(t, res, 400, 'invalid_request', name);
    t.match(res.body.error.message, param, `${name}: names the param`);
  }
  const missingModel = await mint(h, key.key, { session: { type: 'realtime' } });
  expectError(t, missingModel, 400, 'invalid_request', 'no model');
  t.equal((await h.db.pool.query('SELECT 1 FROM voice_sessions')).rowCount, 0, 'no session');
  t.same(await walletRow(h, key.wallet_id), { balance: 1000, reserved: 0 }, 'nothing reserved');
});

t.test('the refusals of a create: key (401, before the body), model (404), wallet (402)', async (t) => {
  const h = await startControlPlane(t);
  const poor = await createKey(h, 0);
  expectError(t, await mint(h, 'vr_sk_' + 'x'.repeat(40)), 401, 'invalid_vr_sk', 'unknown key');
  expectError(t, await mint(h, 'vr_sk_' + 'x'.repeat(40), { nonsense: true }), 401, 'invalid_vr_sk', 'unknown key, bad body');
  expectError(t, await mint(h, poor.key, { session: { ...BODY.session, model: 'local/none' } }), 404, 'model_not_found');
  expectError(t, await mint(h, poor.key), 402, 'insufficient_wallet_balance');
});

t.test('an ek_ secret opens no HTTP route (401)', async (t) => {
  const h = await startControlPlane(t);
  const key = await createKey(h, 1000);
  const minted = await mint(h, key.key);
  const ek = minted.body.value as string;
  const id = minted.body.session.id as string;
  expectError(t, await mint(h, ek), 401, 'invalid_vr_sk', 'minting with a secret');
  expectError(t, await createSession(h, ek), 401, 'invalid_vr_sk', 'creating a session');
  expectError(t, await api(h, 'GET', `/v1/voice/sessions/${id}`, { headers: bearer(ek) }), 401, 'invalid_vr_sk', 'reading its session');
  expectError(t, await api(h, 'POST', `/v1/voice/sessions/${id}/end`, { headers: bearer(ek) }), 401, 'invalid_vr_sk', 'ending its session');
  expectError(
    t,
    await api(h, 'POST', `/v1/voice/sessions/${id}/client_secrets`, { headers: bearer(ek) }),
    401,
    'invalid_vr_sk',
    'minting another',
  );
});

t.test('POST /v1/voice/sessions/{id}/client_secrets: 201 for an owned live session; 401, 404, 410 otherwise', async (t) => {
  const h = await startControlPlane(t);
  const key = await createKey(h, 1000);
  const other = await createKey(h, 1000);
  const session = (await createSession(h, key.key)).body;
  const before = Math.floor(Date.now() / 1000);

  const res = await api(h, 'POST', `/v1/voice/sessions/${session.id}/client_secrets`, { headers: bearer(key.key) });
  t.equal(res.status, 201);
  t.ok(ClientSecret.safeParse(res.body).success, 'exactly { value, expires_at }');
  t.ok(res.body.expires_at >= before + 60 && res.body.expires_at <= before + 61);
  const longer = await api(h, 'POST', `/v1/voice/sessions/${session.id}/client_secrets`, {
    headers: bearer(key.key),
    json: { expires_after: { anchor: 'created_at', seconds: 300 } },
  });
  t.equal(longer.status, 201);
  t.ok(longer.body.expires_at >= before + 300 && longer.body.expires_at <= before + 301);
  t.not(longer.body.value, res.body.value, 'a new secret each time');
  const { rows } = await h.db.pool.query('SELECT ends_with_socket, initial_settings FROM voice_sessions WHERE id = $1', [session.id]);
  t.same(rows[0], { ends_with_socket: false, initial_settings: null }, 'the session keeps its canonical rules');
  t.notOk(h.logLines.join('').includes(res.body.value), 'not logged');

  const path = `/v1/voice/sessions/${session.id}/client_secrets`;
  expectError(t, await api(h, 'POST', path, { headers: bearer(other.key) }), 401, 'invalid_vr_sk', 'another key');
  expectError(t, await api(h, 'POST', path), 401, 'invalid_vr_sk', 'no key');
  expectError(t, await api(h, 'POST', '/v1/voice/sessions/vs_nope/client_secrets', { headers: bearer(key.key) }), 404, 'session_not_found');
  expectError(
    t,
    await api(h, 'POST', path, { headers: bearer(key.key), json: { expires_after: { anchor: 'created_at', seconds: 9000 } } }),
    400,
    'invalid_request',
  );

  h.advanceClock(301_000);
  expectError(t, await api(h, 'POST', path, { headers: bearer(key.key) }), 410, 'session_expired', 'an idle session past its deadline');
  t.equal((await secretRows(h)).length, 2, 'no secret for it');
});

t.test('session.reasoning and session.prompt are refused at creation for a model whose provider cannot honour them', async (t) => {
  const h = await startControlPlane(t);
  const key = await createKey(h, 100_000);
  // An OpenAI-backed model honours every current session field (the catalog's capabilities.session_fields).
  const openai = await api(h, 'PUT', '/admin/v1/models', {
    headers: adminHeaders,
    json: {
      id: 'acme/reasoner-1',
      display_name: 'Acme Reasoner',
      owned_by: 'acme',
      provider: 'openai',
      provider_model: 'gpt-realtime',
      enabled: true,
      approved: true,
      pricing: { per_minute: 600, audio_in_token: 5, audio_out_token: 7, relay_fee_milli_cents: 100 },
    },
  });
  t.equal(openai.status, 200);
  const models = (await api(h, 'GET', '/v1/models')).body.data as { id: string; capabilities: { session_fields: object } }[];
  t.match(models.find((m) => m.id === 'local/echo-1')?.capabilities.session_fields, { reasoning: false, prompt: false });
  t.match(models.find((m) => m.id === 'acme/reasoner-1')?.capabilities.session_fields, { reasoning: true, prompt: true });

  const hints = { parallel_tool_calls: false, truncation: 'auto', include: ['item.input_audio_transcription.logprobs'] };
  const fields: [string, Record<string, unknown>][] = [
    ['session.reasoning', { reasoning: { effort: 'low' } }],
    ['session.prompt', { prompt: { id: 'pmpt_123', version: '2' } }],
  ];
  for (const [param, field] of fields) {
    const refused = await mint(h, key.key, { session: { ...BODY.session, ...field, ...hints } });
    expectError(t, refused, 400, 'invalid_request', param);
    t.ok(refused.body.error.message.includes(param), `${param}: named in the message`);
  }
  t.equal((await h.db.pool.query('SELECT 1 FROM voice_sessions')).rowCount, 0, 'no session created');
  t.same(await walletRow(h, key.wallet_id), { balance: 100_000, reserved: 0 }, 'nothing reserved');
  // Once more, now that the model's rate is known: the statement that reserves refuses it too.
  expectError(t, await mint(h, key.key, { session: { ...BODY.session, reasoning: { effort: 'low' } } }), 400, 'invalid_request', 'again');
  t.same(await walletRow(h, key.wallet_id), { balance: 100_000, reserved: 0 }, 'still nothing reserved');
  expectError(
    t,
    await mint(h, 'vr_sk_' + 'x'.repeat(40), { session: { ...BODY.session, reasoning: {} } }),
    401,
    'invalid_vr_sk',
    'key first',
  );

  const hinted = await mint(h, key.key, { session: { ...BODY.session, ...hints } });
  t.equal(hinted.status, 200, 'the hints alone are accepted where not honoured');
  const all = { ...hints, reasoning: { effort: 'low' }, prompt: { id: 'pmpt_123', version: '2' } };
  const accepted = await mint(h, key.key, { session: { ...BODY.session, model: 'acme/reasoner-1', ...all } });
  t.equal(accepted.status, 200, 'the same body is accepted on a model whose provider honours it');
  t.match(accepted.body.session, {
    model: 'acme/reasoner-1',
    reasoning: { effort: 'low' },
    prompt: { id: 'pmpt_123' },
    truncation: 'auto',
  });
  const { rows } = await h.db.pool.query<{ model_id: string; initial_settings: Record<string, unknown> }>(
    'SELECT model_id, initial_settings FROM voice_sessions ORDER BY created_at',
  );
  t.equal(rows.length, 2);
  t.match(rows[1], { model_id: 'acme/reasoner-1', initial_settings: all });
});
