// What docs/asyncapi.json says of the OpenAI-compatible dialect holds on the wire: every event the real
// gateway sends on the legacy path parses as the contract's OpenAiServerEvent, and every event this
// client sends is an OpenAiClientEvent. (svc-realtime-v1: sdk.test.ts validates every event it receives.)
import t from 'tap';
import { CreateKeyResponse, OpenAiClientEvent, OpenAiServerEvent } from '@s2s/contract';
import { pcmSilence, pcmTone } from '@s2s/local-provider';
import WebSocket from 'ws';
import { api, startStack } from './stack.js';

t.test('the OpenAI dialect matches its AsyncAPI description', async (t) => {
  const stack = await startStack(t);
  const minted = CreateKeyResponse.parse((await api(stack, 'POST', '/admin/v1/keys', { admin: true, body: { balance_cents: 5000 } })).body);
  const ws = new WebSocket(`${stack.relayUrl}?model=local/echo-1`, { headers: { Authorization: `Bearer ${minted.key}` } });
  const received: { type: string; ok: boolean; issue?: string }[] = [];
  const waiters: { type: string; n: number; resolve: () => void }[] = [];
  const counts = new Map<string, number>();
  ws.on('message', (data) => {
    const event = JSON.parse(data.toString()) as { type: string };
    const parsed = OpenAiServerEvent.safeParse(event);
    const issue = parsed.success ? undefined : `${parsed.error.issues[0]?.path.join('.')} ${parsed.error.issues[0]?.message}`;
    received.push({ type: event.type, ok: parsed.success, ...(issue ? { issue } : {}) });
    counts.set(event.type, (counts.get(event.type) ?? 0) + 1);
    for (const w of waiters) if (w.type === event.type && (counts.get(w.type) ?? 0) >= w.n) w.resolve();
  });
  const nth = (type: string, n: number) =>
    (counts.get(type) ?? 0) >= n ? Promise.resolve() : new Promise<void>((resolve) => waiters.push({ type, n, resolve }));
  const send = (event: unknown) => {
    const parsed = OpenAiClientEvent.safeParse(event);
    t.ok(parsed.success, `client event ${(event as { type: string }).type} is an OpenAiClientEvent`);
    ws.send(JSON.stringify(event));
  };
  await new Promise((resolve, reject) => ws.once('open', resolve).once('error', reject));
  t.equal(ws.protocol, '', 'no subprotocol offered, none echoed: the OpenAI dialect');

  await nth('session.created', 1);
  send({ type: 'session.update', session: { type: 'realtime', instructions: 'Be brief.', audio: { input: { transcription: {} } } } });
  await nth('session.updated', 1);
  // Refused (the contract takes PCM16 at 24 kHz and G.711 only): the error event is what is checked here.
  ws.send(
    JSON.stringify({
      type: 'session.update',
      session: { type: 'realtime', audio: { output: { format: { type: 'audio/pcm', rate: 16000 } } } },
    }),
  );
  await nth('error', 1);
  const audio = Buffer.concat([pcmTone(600), pcmSilence(700)]);
  for (let off = 0; off < audio.length; off += 960)
    send({ type: 'input_audio_buffer.append', audio: audio.subarray(off, off + 960).toString('base64') });
  await nth('response.done', 1);
  send({ type: 'input_audio_buffer.clear' });
  send({ type: 'conversation.item.create', item: { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'hello' }] } });
  send({ type: 'response.create', response: { output_modalities: ['text'] } });
  await nth('response.done', 2);
  ws.close(1000);

  const types = new Set(received.map((r) => r.type));
  for (const type of [
    'session.created',
    'session.updated',
    'error',
    'response.created',
    'response.output_audio.delta',
    'response.done',
    'response.output_text.done',
  ]) {
    t.ok(types.has(type), `the gateway sent ${type}`);
  }
  t.same(
    received.filter((r) => !r.ok),
    [],
    `all ${received.length} server events parse as OpenAiServerEvent`,
  );
});
