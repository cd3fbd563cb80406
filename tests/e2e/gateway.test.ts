import t from 'tap';
import { CreateKeyResponse, REALTIME_PROTOCOL, ResponseDoneEvent, VoiceSession, Wallet, type Rate } from '@s2s/contract';
import { billedCents, preauthorizationCents, SEED_RATE, usageOf } from '@s2s/core';
import { checkLedgerInvariants } from '@s2s/db/testing';
import { pcmFrames, pcmSilence, pcmTone } from '@s2s/local-provider';
import { Client, eventually } from '@s2s/testing';
import WebSocket from 'ws';
import { api, expectCharged, startStack, type Stack } from './stack.js';

// The seeded catalog entry local/echo-1 (provider local, VAD playback) and its rate.
const MODEL = 'local/echo-1';
const RATE: Rate = SEED_RATE;

async function operatorKey(stack: Stack, balanceCents: number): Promise<CreateKeyResponse> {
  const res = await api<CreateKeyResponse>(stack, 'POST', '/admin/v1/keys', {
    admin: true,
    body: { balance_cents: balanceCents, label: 'e2e' },
  });
  if (res.status !== 201) throw new Error(`key creation answered ${res.status}`);
  return CreateKeyResponse.parse(res.body);
}

async function connect(url: string, secret: string): Promise<Client> {
  const ws = new WebSocket(url, REALTIME_PROTOCOL, { headers: { Authorization: `Bearer ${secret}` }, perMessageDeflate: false });
  const client = new Client(ws);
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('unexpected-response', (_req, res) => reject(new Error(`attach refused: ${res.statusCode}`)));
    ws.once('error', reject);
  });
  return client;
}

/** One spoken turn: 1 s of tone, 500 ms of silence; resolves with the response.done. */
async function talk(client: Client): Promise<ResponseDoneEvent> {
  for (const f of pcmFrames(Buffer.concat([pcmTone(1000), pcmSilence(500)]))) client.append(f);
  return ResponseDoneEvent.parse(await client.next('response.done'));
}

async function tokensOf(stack: Stack, sessionId: string): Promise<{ input: number; output: number }> {
  const { rows } = await stack.db.db.pool.query<{ input: number; output: number }>(
    'SELECT input_audio_tokens::int AS input, output_audio_tokens::int AS output FROM voice_sessions WHERE id = $1',
    [sessionId],
  );
  return rows[0] ?? { input: -1, output: -1 };
}

t.test('the whole lifecycle: key, session, attach, talk, end, a wallet settled to the cent', async (t) => {
  const stack = await startStack(t);
  const key = await operatorKey(stack, 1000);
  t.equal(key.balance_cents, 1000);

  const models = await api<{ data: { id: string }[] }>(stack, 'GET', '/v1/models');
  t.ok(
    models.body.data.some((m) => m.id === MODEL),
    'the model is listed',
  );

  const created = await api<VoiceSession>(stack, 'POST', '/v1/voice/sessions', {
    key: key.key,
    body: { model: MODEL, mode: 'speech_to_speech' },
  });
  t.equal(created.status, 201);
  const session = VoiceSession.parse(created.body);
  const preauth = preauthorizationCents(RATE, 10);
  t.equal(session.billing.preauthorized_cents, preauth);
  t.equal(session.realtime.url, `${stack.relayUrl}?session_id=${session.id}`);

  const client = await connect(session.realtime.url, key.key);
  const sc = await client.next();
  t.equal(sc.type, 'session.created');
  t.equal((sc.session as VoiceSession).id, session.id);
  t.equal((await client.next()).type, 'conversation.created');
  const done = await talk(client);
  t.equal(done.response.status, 'completed');
  t.same(done.response.usage, usageOf({ audio_in_ms: 1500, audio_out_ms: 1000, input_audio_tokens: 15, output_audio_tokens: 20 }));

  const active = await api<VoiceSession>(stack, 'GET', `/v1/voice/sessions/${session.id}`, { key: key.key });
  t.equal(active.body.status, 'active');

  const ended = await api<VoiceSession>(stack, 'POST', `/v1/voice/sessions/${session.id}/end`, { key: key.key });
  t.equal(ended.status, 200);
  const final = VoiceSession.parse(ended.body);
  t.equal((await client.closed).code, 1000, 'the relay closed the socket: session ended');
  const usage = {
    audio_in_ms: 1500,
    audio_out_ms: 1000,
    input_audio_tokens: 15,
    output_audio_tokens: 20,
    input_text_tokens: 0,
    cached_input_tokens: 0,
    output_text_tokens: 0,
    transcribed_ms: 0,
  };
  // ceil((1000 * 2500 / 60000 + 10 * 15 + 20 * 20 + 500) / 1000) = ceil(1091.67 / 1000)
  const expected = billedCents(RATE, usage);
  t.equal(expected, 2);
  t.equal(final.status, 'completed');
  t.equal(final.usage.audio_in_ms, 1500);
  t.equal(final.usage.audio_out_ms, 1000);
  t.equal(final.usage.billed_cents, expected);
  t.equal(final.billing.reserved_cents, 0);
  t.same(await tokensOf(stack, session.id), { input: 15, output: 20 });

  await expectCharged(t, stack, key.wallet_id, 1000, expected);

  const again = await api<VoiceSession>(stack, 'POST', `/v1/voice/sessions/${session.id}/end`, { key: key.key });
  t.equal(again.body.usage.billed_cents, expected, 'ending again settles nothing twice');
  t.same(await checkLedgerInvariants(stack.db.db.pool), []);
});

t.test('the legacy path: create on attach, Deprecation: true, ended and settled when the socket closes', async (t) => {
  const stack = await startStack(t);
  const key = await operatorKey(stack, 500);
  const client = await connect(`${stack.relayUrl}?model=${encodeURIComponent(MODEL)}`, key.key);
  t.equal(client.headers['deprecation'], 'true');
  const session = VoiceSession.parse((await client.next('session.created')).session);
  const done = await talk(client);
  t.same(done.response.usage, usageOf({ audio_in_ms: 1500, audio_out_ms: 1000, input_audio_tokens: 15, output_audio_tokens: 20 }));
  await client.close();

  const expected = billedCents(RATE, {
    audio_in_ms: 1500,
    audio_out_ms: 1000,
    input_audio_tokens: 15,
    output_audio_tokens: 20,
    input_text_tokens: 0,
    cached_input_tokens: 0,
    output_text_tokens: 0,
    transcribed_ms: 0,
  });
  const settled = await eventually(
    () => api<VoiceSession>(stack, 'GET', `/v1/voice/sessions/${session.id}`, { key: key.key }),
    (r) => r.body?.billing?.reserved_cents === 0 && r.body?.status === 'completed',
    15_000,
  );
  t.equal(settled.body.status, 'completed');
  t.equal(settled.body.usage.billed_cents, expected);
  await expectCharged(t, stack, key.wallet_id, 500, expected);
});

t.test('a relay killed mid-stream (SIGKILL): the session still settles from its last checkpoint', async (t) => {
  const stack = await startStack(t);
  const key = await operatorKey(stack, 1000);
  const created = await api<VoiceSession>(stack, 'POST', '/v1/voice/sessions', {
    key: key.key,
    body: { model: MODEL, mode: 'speech_to_speech' },
  });
  const session = VoiceSession.parse(created.body);
  const client = await connect(session.realtime.url, key.key);
  await client.next('conversation.created');
  await talk(client);
  // Keep streaming silence in real time until billing has folded a checkpoint past the answer.
  const pool = stack.db.db.pool;
  let folded = { seq: 0, audio_in_ms: 0 };
  for (let i = 0; i < 200 && folded.audio_in_ms < 2000; i++) {
    client.append(pcmSilence(20));
    await new Promise((r) => setTimeout(r, 20));
    const { rows } = await pool.query<{ seq: number; audio_in_ms: number }>(
      'SELECT seq, audio_in_ms::int AS audio_in_ms FROM session_attachments WHERE session_id = $1',
      [session.id],
    );
    folded = rows[0] ?? folded;
  }
  t.ok(folded.audio_in_ms >= 2000, `billing folded ${folded.audio_in_ms} ms (seq ${folded.seq}) before the kill`);

  stack.relay.child.kill('SIGKILL');
  t.equal(await stack.relay.exited, null, 'killed, no clean exit');
  await client.closed;
  const { rows: before } = await pool.query<{
    final: boolean;
    audio_in_ms: number;
    audio_out_ms: number;
    input_audio_tokens: number;
    output_audio_tokens: number;
  }>(
    `SELECT final, audio_in_ms::int AS audio_in_ms, audio_out_ms::int AS audio_out_ms,
            input_audio_tokens::int AS input_audio_tokens, output_audio_tokens::int AS output_audio_tokens
       FROM session_attachments WHERE session_id = $1`,
    [session.id],
  );
  const last = before[0];
  t.equal(last?.final, false, 'no final checkpoint ever came');

  const ended = await api<VoiceSession>(stack, 'POST', `/v1/voice/sessions/${session.id}/end`, { key: key.key });
  t.equal(ended.status, 200);
  const final = VoiceSession.parse(ended.body);
  t.equal(final.status, 'completed');
  if (last) {
    t.equal(final.usage.audio_in_ms, last.audio_in_ms, 'settled from the last checkpoint');
    t.equal(final.usage.audio_out_ms, 1000);
    const expected = billedCents(RATE, usageOf(last));
    t.equal(final.usage.billed_cents, expected);
    const wallet = Wallet.parse((await api(stack, 'GET', `/admin/v1/wallets/${key.wallet_id}`, { admin: true })).body);
    t.same(wallet, { id: key.wallet_id, balance_cents: 1000 - expected, reserved_cents: 0, available_cents: 1000 - expected });
  }
  t.same(await checkLedgerInvariants(pool), []);
});
