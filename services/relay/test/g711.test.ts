// G.711 in the OpenAI dialect (decisions.md, "Phone audio"): μ-law and A-law each side on its own, in
// session.update and in a client secret's session, converted at the codec, metered in real milliseconds.
import t from 'tap';
import { encodeG711, G711_BYTES_PER_MS } from '@s2s/audio';
import { createSession, mintClientSecret } from '@s2s/sessions';
import WebSocket from 'ws';
import { Client, TEST_POLICY, createKey, createModel, eventually, setupRelay, silence, sleep, tone } from './helpers.js';

const MODEL = 'test/g711-1';
const next = async (c: Client, type?: string) => (await c.next(type)) as Record<string, any>;

async function open(url: string, headers: Record<string, string>, protocols: string[] = []) {
  const ws = new WebSocket(url, protocols, { headers, perMessageDeflate: false });
  const client = new Client(ws);
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('unexpected-response', (_req, res) => reject(new Error(`refused ${res.statusCode}`)));
    ws.once('error', reject);
  });
  return { ws, client };
}

/** 24 kHz PCM16 as 8 kHz G.711 (every third sample: the tone is far below 4 kHz). */
function g711Of(pcm: Buffer, law: 'pcmu' | 'pcma'): Buffer {
  const n = Math.floor(pcm.length / 6);
  const s = new Int16Array(n);
  for (let i = 0; i < n; i++) s[i] = pcm.readInt16LE(6 * i);
  return Buffer.from(encodeG711(law, s));
}

async function sendG711(client: Client, g711: Buffer, frame = 160): Promise<void> {
  for (let i = 0; i < g711.length; i += frame) {
    client.send({ type: 'input_audio_buffer.append', audio: g711.subarray(i, i + frame).toString('base64') });
    await sleep(2);
  }
}

t.test('μ-law in, A-law out: formats change at the confirming session.updated, usage in real milliseconds', async (t) => {
  const env = await setupRelay(t);
  await createModel(env.db, { id: MODEL });
  const key = await createKey(env.db, 1000);
  const { client, ws } = await open(`${env.url}?model=${MODEL}`, { Authorization: `Bearer ${key.secret}` });
  t.teardown(() => ws.terminate());
  await next(client, 'session.created');

  client.send({
    type: 'session.update',
    event_id: 'f1',
    session: { type: 'realtime', audio: { input: { format: { type: 'audio/pcmu' } }, output: { format: { type: 'audio/pcma' } } } },
  });
  const updated = await next(client, 'session.updated');
  t.same(updated.session.audio.input.format, { type: 'audio/pcmu' });
  t.same(updated.session.audio.output.format, { type: 'audio/pcma' });

  // A G.711 append is any non-empty whole number of bytes of valid base64 (an odd count is fine).
  client.send({ type: 'input_audio_buffer.append', event_id: 'odd', audio: Buffer.alloc(3, 0xff).toString('base64') });
  client.send({ type: 'input_audio_buffer.append', event_id: 'bad', audio: 'not base64!' });
  client.send({ type: 'input_audio_buffer.append', event_id: 'empty', audio: '' });
  const e1 = await next(client, 'error');
  const e2 = await next(client, 'error');
  t.match(e1.error, { code: 'invalid_audio_format', event_id: 'bad', param: 'audio' });
  t.match(e2.error, { code: 'invalid_audio_format', event_id: 'empty' });

  const speech = g711Of(Buffer.concat([tone(600), silence(700)]), 'pcmu');
  await sendG711(client, speech);
  let outBytes = 0;
  for (;;) {
    const e = await next(client);
    if (e.type === 'response.output_audio.delta') outBytes += Buffer.from(e.delta, 'base64').length;
    if (e.type === 'response.done') break;
  }
  t.ok(outBytes > 0, 'the answer came back in A-law');

  // What was metered: the G.711 bytes as milliseconds (8 bytes = 1 ms), and the answer's real length.
  const inMs = (speech.length + 3) / G711_BYTES_PER_MS;
  const cp = await eventually(
    () => env.checkpoints.at(-1),
    (c) => c !== undefined && c.audio_in_ms >= Math.floor(inMs) && c.audio_out_ms >= Math.floor(outBytes / G711_BYTES_PER_MS) - 1,
  );
  t.equal(cp?.audio_in_ms, Math.floor(inMs), 'audio_in_ms: the μ-law bytes ÷ 8');
  t.ok(
    Math.abs((cp?.audio_out_ms ?? 0) - outBytes / G711_BYTES_PER_MS) <= 1,
    `audio_out_ms: the A-law delivered ÷ 8, within a millisecond (${cp?.audio_out_ms} vs ${outBytes / 8})`,
  );
});

t.test("a client secret's session opens in μ-law; PCM16 comes back at the next session.updated", async (t) => {
  const env = await setupRelay(t);
  await createModel(env.db, { id: MODEL });
  const key = await createKey(env.db, 1000);
  const { session } = await createSession({
    ctx: { db: env.db },
    input: {
      key: { keyId: key.keyId, walletId: key.walletId },
      request: { model: MODEL, mode: 'speech_to_speech' },
      clientSecretSettings: { audio: { input: { format: { type: 'audio/pcmu' } }, output: { format: { type: 'audio/pcmu' } } } },
      traceId: 'c'.repeat(32),
      policy: TEST_POLICY,
    },
  });
  const ek = (await mintClientSecret({ ctx: { db: env.db }, input: { sessionId: session.id, ttlSeconds: 60, now: new Date() } })).value;
  const { client, ws } = await open(`${env.url}?model=${MODEL}`, {}, ['realtime', `openai-insecure-api-key.${ek}`]);
  t.teardown(() => ws.terminate());
  const created = await next(client, 'session.created');
  t.same(created.session.audio.input.format, { type: 'audio/pcmu' });
  t.same(created.session.audio.output.format, { type: 'audio/pcmu' });
  await sendG711(client, g711Of(Buffer.concat([tone(400), silence(700)]), 'pcmu'));
  const delta = await next(client, 'response.output_audio.delta');
  const first = Buffer.from(delta.delta, 'base64');
  t.ok(first.length > 0, 'μ-law out');

  client.send({ type: 'session.update', session: { type: 'realtime', audio: { output: { format: { type: 'audio/pcm', rate: 24000 } } } } });
  const updated = await next(client, 'session.updated');
  t.same(updated.session.audio.output.format, { type: 'audio/pcm', rate: 24000 });
  t.same(updated.session.audio.input.format, { type: 'audio/pcmu' }, 'each side on its own');
});
