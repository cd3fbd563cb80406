// A relay that dies mid-call (decisions.md, "Phone calls"): the call ends with it (a telephony provider does
// not reconnect); the gateway ends the session once the relay's lease has expired (end cause relay_lost), and
// it is settled exactly once from what was measured, its last checkpoint, with no help from the application.
import t from 'tap';
import { CreateKeyResponse, RealtimeClientSecretResponse, VoiceSession, Wallet } from '@s2s/contract';
import { billedCents, SEED_RATE, usageOf } from '@s2s/core';
import { checkLedgerInvariants } from '@s2s/db/testing';
import { pcmSilence, pcmTone } from '@s2s/local-provider';
import { sleep } from '@s2s/testing';
import WebSocket from 'ws';
import { mulawOf } from './phone.js';
import { api, startStack } from './stack.js';

const MODEL = 'local/echo-1';
const SID = 'MZ00000000000000000000000000000042';

t.test('a relay killed mid-call (SIGKILL): the gateway ends the call promptly, settled once from its last checkpoint', async (t) => {
  const stack = await startStack(t);
  const key = CreateKeyResponse.parse(
    (await api<CreateKeyResponse>(stack, 'POST', '/admin/v1/keys', { admin: true, body: { balance_cents: 1000, label: 'phone' } })).body,
  );
  const minted = RealtimeClientSecretResponse.parse(
    (
      await api(stack, 'POST', '/v1/realtime/client_secrets', {
        key: key.key,
        body: { session: { type: 'realtime', model: MODEL, instructions: 'You answer the phone.' } },
      })
    ).body,
  );
  const sessionId = minted.session.id;

  const phone = new WebSocket(stack.relayUrl.replace('/v1/realtime', '/v1/telephony/twilio'));
  const received: Record<string, any>[] = [];
  phone.on('message', (d) => received.push(JSON.parse(d.toString())));
  phone.on('error', () => {});
  const closed = new Promise<number>((resolve) => phone.on('close', (code) => resolve(code)));
  await new Promise<void>((resolve) => phone.once('open', () => resolve()));
  const send = (m: unknown) => phone.send(JSON.stringify(m));
  send({ event: 'connected', protocol: 'Call', version: '1.0.0' });
  send({
    event: 'start',
    sequenceNumber: '1',
    start: {
      accountSid: 'AC1',
      streamSid: SID,
      callSid: 'CA1',
      tracks: ['inbound'],
      mediaFormat: { encoding: 'audio/x-mulaw', sampleRate: 8000, channels: 1 },
      customParameters: { client_secret: minted.value },
    },
    streamSid: SID,
  });

  // The caller talks, then the line carries silence in real time until billing folded a checkpoint past 2 s.
  const pool = stack.db.db.pool;
  const audio = mulawOf(Buffer.concat([pcmTone(800), pcmSilence(600)]));
  let chunk = 0;
  const media = (payload: Buffer) =>
    send({
      event: 'media',
      sequenceNumber: String(++chunk + 1),
      media: { track: 'inbound', chunk: String(chunk), timestamp: String(chunk * 20), payload: payload.toString('base64') },
      streamSid: SID,
    });
  for (let i = 0; i < audio.length; i += 160) {
    media(audio.subarray(i, i + 160));
    await sleep(20);
  }
  let folded = { audio_in_ms: 0 };
  for (let i = 0; i < 300 && folded.audio_in_ms < 2000; i++) {
    media(Buffer.alloc(160, 0xff));
    await sleep(20);
    const { rows } = await pool.query<{ audio_in_ms: number }>(
      'SELECT audio_in_ms::int AS audio_in_ms FROM session_attachments WHERE session_id = $1',
      [sessionId],
    );
    folded = rows[0] ?? folded;
  }
  t.ok(folded.audio_in_ms >= 2000, `billing folded ${folded.audio_in_ms} ms before the kill`);
  t.ok(
    received.some((m) => m.event === 'media'),
    'the caller heard the answer',
  );

  stack.relay.child.kill('SIGKILL');
  const killedAt = Date.now();
  t.equal(await stack.relay.exited, null, 'killed, no clean exit');
  t.equal(await closed, 1006, 'the call ends with the relay');

  // Nobody ends it: the gateway does, once the relay's lease has expired (a telephony provider never reattaches).
  // Bound: the lease TTL (3 s here) + a sweep (0.5 s) + billing's grace for a gone relay (1.5 s), with room for a
  // loaded machine.
  const BOUND_MS = 15_000;
  let settled: VoiceSession | undefined;
  while (Date.now() - killedAt < BOUND_MS + 5000) {
    const got = VoiceSession.parse((await api(stack, 'GET', `/v1/voice/sessions/${sessionId}`, { key: key.key })).body);
    if (got.status !== 'ready' && got.status !== 'active') {
      settled = got;
      break;
    }
    await sleep(200);
  }
  const tookMs = Date.now() - killedAt;
  t.ok(settled, 'the session ended without the application');
  t.ok(tookMs <= BOUND_MS, `settled ${tookMs} ms after the kill (bound ${BOUND_MS} ms)`);
  t.equal(settled?.status, 'failed', 'a call cut by the gateway is failed');

  const { rows } = await pool.query<{
    final: boolean;
    audio_in_ms: number;
    audio_out_ms: number;
    input_audio_tokens: number;
    output_audio_tokens: number;
  }>(
    `SELECT final, audio_in_ms::int AS audio_in_ms, audio_out_ms::int AS audio_out_ms,
            input_audio_tokens::int AS input_audio_tokens, output_audio_tokens::int AS output_audio_tokens
       FROM session_attachments WHERE session_id = $1`,
    [sessionId],
  );
  const last = rows[0];
  t.equal(last?.final, false, 'no final checkpoint ever came');
  const cause = await pool.query<{ end_cause: string }>('SELECT end_cause FROM voice_sessions WHERE id = $1', [sessionId]);
  t.equal(cause.rows[0]?.end_cause, 'relay_lost', 'the end reason names the lost relay');

  if (last && settled) {
    t.ok(last.audio_in_ms >= folded.audio_in_ms, 'settled from the last checkpoint folded');
    t.equal(settled.usage.audio_in_ms, last.audio_in_ms, 'settled from the last checkpoint');
    t.equal(settled.usage.audio_out_ms, last.audio_out_ms);
    const expected = billedCents(SEED_RATE, usageOf(last));
    t.ok(expected > 0, 'the call cost something');
    t.equal(settled.usage.billed_cents, expected, 'the bill to the cent');
    // The application's end after the fact changes nothing: one settlement.
    const again = await api<VoiceSession>(stack, 'POST', `/v1/voice/sessions/${sessionId}/end`, { key: key.key });
    t.equal(VoiceSession.parse(again.body).usage.billed_cents, expected, 'settled once');
    const ledger = await pool.query('SELECT 1 FROM ledger_entries WHERE session_id = $1', [sessionId]);
    t.equal(ledger.rowCount, 1, 'one charge');
    const wallet = Wallet.parse((await api(stack, 'GET', `/admin/v1/wallets/${key.wallet_id}`, { admin: true })).body);
    t.same(wallet, { id: key.wallet_id, balance_cents: 1000 - expected, reserved_cents: 0, available_cents: 1000 - expected });
  }
  t.same(await checkLedgerInvariants(pool), []);
});
