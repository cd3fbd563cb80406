// Voice agents end to end (issue 9, Tests): the real control plane, relay, billing, PostgreSQL and NATS on
// the local provider. Every expected figure follows the simulator's documented rules (its README), computed
// here on its own: text 1 token per 4 characters, audio in 1 per 100 ms, audio out 1 per 50 ms, the whole
// context billed on every response with the previous response's context counted as cached.
import t, { type Test } from 'tap';
import { CreateKeyResponse, VoiceSession } from '@s2s/contract';
import { ZERO_USAGE, type Usage } from '@s2s/core';
import { BYTES_PER_MS, pcmFrames, pcmSilence, pcmTone } from '@s2s/local-provider';
import { type Client, type ServerEventLike } from '@s2s/testing';
import { expectedCents } from './bill.js';
import { api, attachSession, expectCharged, startStack, type Stack } from './stack.js';

const MODEL = 'local/echo-1';

const text = (s: string) => Math.ceil(s.length / 4);
const audioIn = (ms: number) => Math.ceil(ms / 100);
const audioOut = (ms: number) => Math.ceil(ms / 50);

// The counters' names and zeros are the contract's; every figure below is computed here on its own.
type Counters = Usage;
const ZERO: Counters = ZERO_USAGE;
const sum = (parts: Counters[]): Counters =>
  parts.reduce(
    (a, b) => Object.fromEntries(Object.keys(ZERO).map((k) => [k, a[k as keyof Counters] + b[k as keyof Counters]])) as unknown as Counters,
    ZERO,
  );

async function setup(t: Test, providerEnv: Record<string, string> = {}) {
  const stack = await startStack(t, { provider: providerEnv });
  const keyRes = await api<CreateKeyResponse>(stack, 'POST', '/admin/v1/keys', {
    admin: true,
    body: { balance_cents: 10_000, label: 'agent' },
  });
  const key = CreateKeyResponse.parse(keyRes.body);
  const models = await api<{ data: { id: string; pricing: Record<string, number> }[] }>(stack, 'GET', '/v1/models');
  const rate = models.body.data.find((m) => m.id === MODEL)!.pricing;
  const created = await api<VoiceSession>(stack, 'POST', '/v1/voice/sessions', {
    key: key.key,
    body: { model: MODEL, mode: 'speech_to_speech' },
  });
  const session = VoiceSession.parse(created.body);
  const client = await attachSession(t, session, key.key);
  return { stack, key, rate, session, client };
}

const marks = new WeakMap<Client, number>();

/** The events since the previous call up to and including the next one of `type`. */
async function until(client: Client, type: string): Promise<ServerEventLike[]> {
  const last = await client.next(type, 30_000);
  const at = client.events.indexOf(last);
  const from = marks.get(client) ?? 0;
  marks.set(client, at + 1);
  return client.events.slice(from, at + 1);
}

/** Every counter the gateway reports (decisions.md, "Usage and price by modality") against the simulator's rules. */
function counters(t: Test, actual: Partial<Counters>, expected: Counters, msg = 'usage'): void {
  const keys = Object.keys(ZERO) as (keyof Counters)[];
  const pick = (o: Partial<Counters>) => Object.fromEntries(keys.map((k) => [k, o[k]]));
  t.same(pick(actual), pick(expected), msg);
}

const usageOf = (done: ServerEventLike) => (done.response as { usage: Counters }).usage;
const outputBytes = (evs: ServerEventLike[]) =>
  evs.filter((e) => e.type === 'response.output_audio.delta').reduce((n, e) => n + Buffer.from(e.audio as string, 'base64').length, 0);

async function endAndCheck(
  t: Test,
  stack: Stack,
  key: CreateKeyResponse,
  session: VoiceSession,
  rate: Record<string, number>,
  total: Counters,
) {
  const ended = await api<VoiceSession>(stack, 'POST', `/v1/voice/sessions/${session.id}/end`, { key: key.key });
  t.equal(ended.status, 200);
  const final = ended.body as VoiceSession & { usage: Counters & { billed_cents: number } };
  t.equal(final.status, 'completed');
  const cents = expectedCents(rate, total);
  counters(t, final.usage, total, 'every counter of the session');
  t.equal(final.usage.billed_cents, cents, 'billed to the cent');
  t.equal(final.billing.reserved_cents, 0);
  await expectCharged(t, stack, key.wallet_id, 10_000, cents);
}

const INSTRUCTIONS = 'You are a weather agent. Answer briefly.';
const WEATHER = {
  type: 'function',
  name: 'get_weather',
  description: 'The weather in a city',
  parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
};

t.test(
  'a voice agent: instructions, a tool, transcripts, a function call answered by the client, its spoken result, barge-in',
  async (t) => {
    // Replies paced at one 100 ms delta per 500 ms: a barge-in after the first delta lands before the second.
    const { stack, key, rate, session, client } = await setup(t, { LOCAL_PROVIDER_REPLY_INTERVAL_MS: '500' });
    client.send({
      type: 'session.update',
      event_id: 'setup',
      session: { instructions: INSTRUCTIONS, tools: [WEATHER], tool_choice: 'auto', audio: { input: { transcription: {} } } },
    });
    const updated = await client.next('session.updated');
    t.match(updated.session, { instructions: INSTRUCTIONS, tools: [WEATHER] });
    const I = text(INSTRUCTIONS);

    // Turn 1: 1 s of speech, 500 ms of silence. Its transcript and the echo's.
    for (const f of pcmFrames(Buffer.concat([pcmTone(1000), pcmSilence(500)]))) client.append(f);
    const turn1 = await until(client, 'response.done');
    const userItem = turn1.find((e) => e.type === 'input_audio_buffer.committed')!.item_id as string;
    t.match(
      turn1.find((e) => e.type === 'conversation.item.input_audio_transcription.completed'),
      { item_id: userItem, transcript: 'speech 1000 ms' },
    );
    t.match(
      turn1.find((e) => e.type === 'response.output_audio_transcript.done'),
      { transcript: 'speech 1000 ms' },
    );
    t.equal(outputBytes(turn1), 1000 * BYTES_PER_MS);
    const u1: Counters = {
      ...ZERO,
      audio_in_ms: 1500,
      audio_out_ms: 1000,
      input_text_tokens: I,
      input_audio_tokens: audioIn(1500),
      output_audio_tokens: audioOut(1000),
      transcribed_ms: 1500,
    };
    counters(t, usageOf(turn1.at(-1)!), u1, 'turn 1: instructions and the turn');

    // Turn 2: a text turn asks for the tool: a function call, no audio.
    const args = '{"city":"Paris"}';
    const ask = `call get_weather ${args}`;
    client.send({
      type: 'conversation.item.create',
      item: { type: 'message', role: 'user', content: [{ type: 'input_text', text: ask }] },
    });
    client.send({ type: 'response.create' });
    const turn2 = await until(client, 'response.done');
    const call = turn2.find((e) => e.type === 'response.function_call_arguments.done')!;
    t.match(call, { name: 'get_weather', arguments: args });
    t.equal(outputBytes(turn2), 0, 'no audio');
    const u2: Counters = {
      ...ZERO,
      // instructions and turn 1 repeat turn 1's context: cached; the spoken reply and the text are new
      cached_input_tokens: I + audioIn(1500),
      input_audio_tokens: audioIn(1000),
      input_text_tokens: text(ask),
      output_text_tokens: text(args),
    };
    counters(t, usageOf(turn2.at(-1)!), u2, 'turn 2: the whole context, its prefix cached');

    // Turn 3: the client answers the call; the result is spoken (60 ms a character); the user barges in.
    const result = 'Sunny, 21 C in Paris';
    client.send({ type: 'conversation.item.create', item: { type: 'function_call_output', call_id: call.call_id, output: result } });
    client.send({ type: 'response.create' });
    await client.next('response.output_audio.delta', 30_000);
    t.match(
      client.events.find((e) => e.type === 'response.output_audio_transcript.delta' && e.delta === result),
      { delta: result },
      'the spoken result carries its text as transcript',
    );
    for (const f of pcmFrames(Buffer.concat([pcmTone(300), pcmSilence(500)]))) client.append(f);
    const turn3 = await until(client, 'response.done');
    const done3 = turn3.at(-1)!;
    t.equal((done3.response as { status: string }).status, 'cancelled', 'barge-in');
    const u3: Counters = {
      ...ZERO,
      audio_out_ms: 100,
      cached_input_tokens: I + text(ask) + audioIn(1500) + audioIn(1000),
      input_text_tokens: text(args) + text(result),
      output_audio_tokens: audioOut(100),
    };
    // The barge-in's 800 ms of input are split between the cancelled response and the next one as the frames
    // happen to arrive: their sum is exact, the split is not.
    const in3 = usageOf(done3).audio_in_ms;
    counters(t, usageOf(done3), { ...u3, audio_in_ms: in3 }, 'turn 3: one 100 ms delta played');
    u3.audio_in_ms = in3;

    // Turn 4: the barge-in itself: 300 ms of speech (800 ms committed), echoed.
    const turn4 = await until(client, 'response.done');
    t.match(
      turn4.find((e) => e.type === 'conversation.item.input_audio_transcription.completed'),
      { transcript: 'speech 300 ms' },
    );
    t.match(
      turn4.find((e) => e.type === 'response.output_audio_transcript.done'),
      { transcript: 'speech 300 ms' },
    );
    const u4: Counters = {
      ...ZERO,
      audio_in_ms: 800 - in3,
      audio_out_ms: 300,
      cached_input_tokens: I + text(ask) + text(args) + text(result) + audioIn(1500) + audioIn(1000),
      // the interrupted reply (100 ms) and the new turn (800 ms)
      input_audio_tokens: audioIn(100) + audioIn(800),
      output_audio_tokens: audioOut(300),
      transcribed_ms: 800,
    };
    counters(t, usageOf(turn4.at(-1)!), u4, 'turn 4');

    await endAndCheck(t, stack, key, session, rate, sum([u1, u2, u3, u4]));
  },
);

t.test('a text-only agent: output text, no audio, billed as text', async (t) => {
  const { stack, key, rate, session, client } = await setup(t);
  client.send({ type: 'session.update', session: { instructions: INSTRUCTIONS, output_modalities: ['text'] } });
  t.match((await client.next('session.updated')).session, { output_modalities: ['text'] });
  const I = text(INSTRUCTIONS);

  const hello = 'Hello gateway, how are you?';
  client.send({
    type: 'conversation.item.create',
    item: { type: 'message', role: 'user', content: [{ type: 'input_text', text: hello }] },
  });
  client.send({ type: 'response.create' });
  const turn1 = await until(client, 'response.done');
  t.equal(turn1.find((e) => e.type === 'response.output_text.done')!.text, hello);
  t.equal(outputBytes(turn1), 0);
  const u1: Counters = { ...ZERO, input_text_tokens: I + text(hello), output_text_tokens: text(hello) };
  counters(t, usageOf(turn1.at(-1)!), u1);

  // An audio turn in text mode: its transcript comes back as text.
  for (const f of pcmFrames(Buffer.concat([pcmTone(500), pcmSilence(500)]))) client.append(f);
  const turn2 = await until(client, 'response.done');
  t.equal(turn2.find((e) => e.type === 'response.output_text.done')!.text, 'speech 500 ms');
  t.equal(outputBytes(turn2), 0, 'no audio in text mode');
  const u2: Counters = {
    ...ZERO,
    audio_in_ms: 1000,
    cached_input_tokens: I + text(hello),
    input_text_tokens: text(hello),
    input_audio_tokens: audioIn(1000),
    output_text_tokens: text('speech 500 ms'),
  };
  counters(t, usageOf(turn2.at(-1)!), u2);

  await endAndCheck(t, stack, key, session, rate, sum([u1, u2]));
});
