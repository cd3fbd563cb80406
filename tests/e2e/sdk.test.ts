// @s2s/client against the real processes (issue 14, Tests): catalog, an idempotent create, a realtime
// conversation with audio both ways, transcripts and a tool call answered by the SDK, every server event
// checked against the contract, client secrets in both carriers, and errors that name the URL.
import t from 'tap';
import { CreateKeyResponse } from '@s2s/contract';
import { billedCents, usageOf } from '@s2s/core';
import { pcmSilence, pcmTone } from '@s2s/local-provider';
import { closedPort } from '@s2s/testing';
import { billOf, S2SApiError, S2SClient, S2SConnectionError, type BrowserWebSocketConstructor, type ServerEvent } from '@s2s/client';
import { WebSocket } from 'ws';
import { api, startStack } from './stack.js';

const MODEL = 'local/echo-1';
const LOOKUP = {
  type: 'function' as const,
  name: 'lookup_order',
  description: 'Looks up an order.',
  parameters: { type: 'object', properties: { order_id: { type: 'string' } } },
};

t.test('the SDK end to end', async (t) => {
  const stack = await startStack(t);
  const minted = CreateKeyResponse.parse((await api(stack, 'POST', '/admin/v1/keys', { admin: true, body: { balance_cents: 5000 } })).body);
  const client = new S2SClient({ baseUrl: stack.baseUrl, apiKey: minted.key });

  const catalog = await client.models.list();
  const model = catalog.data.find((m) => m.id === MODEL);
  t.ok(model, 'the catalog lists the local model');

  const session = await client.sessions.create({ model: MODEL, idempotencyKey: 'sdk-e2e-1' });
  t.equal(session.status, 'ready');
  t.equal((await client.sessions.create({ model: MODEL, idempotencyKey: 'sdk-e2e-1' })).id, session.id, 'a replay is the same session');
  t.equal((await client.sessions.get(session.id)).id, session.id);

  const conn = await client.realtime.connect(session, { validate: true });
  t.equal(conn.session.id, session.id);
  const events: ServerEvent[] = [];
  conn.on('*', (e) => events.push(e));
  let heard = 0;
  conn.onAudio((pcm) => (heard += pcm.byteLength));
  const settings = await conn.updateSession({ audio: { input: { transcription: {} } }, instructions: 'Be brief.', tools: [LOOKUP] });
  t.equal(settings.instructions, 'Be brief.');
  const outputs: string[] = [];
  conn.handleToolCalls((call) => {
    outputs.push(`${call.name} ${call.arguments}`);
    return { order_id: '42', status: 'shipped' };
  });

  // A spoken turn: the simulator answers it with the same audio after 500 ms of silence.
  const spoken = conn.nextResponseDone();
  const sent = await conn.streamAudio(Buffer.concat([pcmTone(600), pcmSilence(700)]));
  t.equal(sent, 1300 * 48);
  const first = await spoken;
  t.equal(first.response.usage.audio_out_ms, 600);
  t.equal(heard, 600 * 48, 'every output byte came through onAudio');

  // A text turn asking for the tool (the simulator calls it on `call <name> <JSON>`); the SDK answers the
  // call and asks for a response, which speaks the tool's output.
  conn.send({ type: 'input_audio_buffer.clear' });
  const result = conn.waitFor('response.output_audio_transcript.done', {
    match: (e) => e.transcript.includes('shipped'),
    timeoutMs: 20_000,
  });
  conn.sendText('call lookup_order {"order_id":"42"}');
  t.equal((await result).transcript, '{"order_id":"42","status":"shipped"}');
  t.same(outputs, ['lookup_order {"order_id":"42"}']);
  await conn.close();

  const ended = await client.sessions.end(session.id);
  const bill = billOf(ended);
  t.equal(bill.settled, true);
  t.equal(ended.status, 'completed');
  t.equal(bill.billedCents, billedCents(model!.pricing, usageOf(bill.usage)), 'the bill is the formula over the settled usage');
  t.ok(bill.usage.audio_in_ms >= 1300 && bill.usage.audio_out_ms >= 600);
  t.ok(
    events.some((e) => e.type === 'conversation.item.input_audio_transcription.completed'),
    'an input transcript',
  );
});

t.test('client secrets in both carriers, and errors that name the URL', async (t) => {
  const stack = await startStack(t);
  const minted = CreateKeyResponse.parse((await api(stack, 'POST', '/admin/v1/keys', { admin: true, body: { balance_cents: 5000 } })).body);
  const client = new S2SClient({ baseUrl: stack.baseUrl, apiKey: minted.key });

  // POST /v1/realtime/client_secrets: a session with settings, attached with the secret as a bearer header (Node).
  const minted1 = await client.clientSecrets.create({ session: { type: 'realtime', model: MODEL, instructions: 'Hi.' } });
  t.match(minted1.value, /^ek_/);
  const keyless = new S2SClient({ baseUrl: stack.baseUrl });
  const viaHeader = await keyless.realtime.connect((await client.sessions.get(minted1.session.id)).realtime.url, {
    credential: minted1.value,
  });
  t.equal(viaHeader.session.id, minted1.session.id);
  await viaHeader.close();

  // POST /v1/voice/sessions/{id}/client_secrets: attached the browser way, the secret in the subprotocol.
  const session = await client.sessions.create({ model: MODEL });
  const secret = await client.sessions.createClientSecret(session.id, { expires_after: { anchor: 'created_at', seconds: 30 } });
  const browserLike = await keyless.realtime.connect(session, {
    credential: secret.value,
    WebSocket: WebSocket as unknown as BrowserWebSocketConstructor,
  });
  t.equal(browserLike.session.id, session.id);
  await browserLike.close();

  // Errors: the gateway's ErrorResponse, and the URL that failed.
  const stranger = new S2SClient({ baseUrl: stack.baseUrl, apiKey: `vr_sk_${'x'.repeat(40)}` });
  const denied = (await stranger.sessions.get(session.id).catch((e: unknown) => e)) as S2SApiError;
  t.ok(denied instanceof S2SApiError);
  t.equal(denied.status, 401);
  t.equal(denied.code, 'invalid_vr_sk');
  t.equal(denied.url, `${stack.baseUrl}/v1/voice/sessions/${session.id}`);
  const refused = (await stranger.realtime.connect(session).catch((e: unknown) => e)) as S2SApiError;
  t.ok(refused instanceof S2SApiError, 'a refused upgrade is read as its ErrorResponse');
  t.equal(refused.status, 401);
  t.equal(refused.code, 'invalid_vr_sk');
  t.equal(refused.url, session.realtime.url);
  const missing = (await client.sessions.end('vs_missing').catch((e: unknown) => e)) as S2SApiError;
  t.equal(missing.code, 'session_not_found');
  const nowhere = `http://127.0.0.1:${await closedPort()}`;
  const unreachable = new S2SClient({ baseUrl: nowhere, apiKey: minted.key });
  const down = (await unreachable.models.list().catch((e: unknown) => e)) as S2SConnectionError;
  t.ok(down instanceof S2SConnectionError);
  t.ok(down.message.startsWith(`GET ${nowhere}/v1/models failed: fetch failed: `), down.message);
  t.match(down.message, /ECONNREFUSED/);

  const ended = await client.sessions.end(session.id);
  t.equal(ended.status, 'cancelled', 'attached but never used: cancelled, billed nothing');
  t.equal(billOf(ended).billedCents, 0);
});
