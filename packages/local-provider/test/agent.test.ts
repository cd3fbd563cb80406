import t, { type Test } from 'tap';
import { pcmFrames, pcmSilence, pcmTone, startLocalProvider, type LocalProvider, type LocalProviderOptions } from '../src/index.js';
import { TestClient, deltaBytes, types, type Ev } from './client.js';

async function provider(t: Test, opts: Partial<LocalProviderOptions> = {}): Promise<LocalProvider> {
  const p = await startLocalProvider({ port: 0, replyChunkIntervalMs: 0, ...opts });
  t.teardown(() => p.close());
  return p;
}

async function client(t: Test, p: LocalProvider, model = 'agent-1'): Promise<TestClient> {
  const c = await TestClient.connect(p.url, model);
  t.teardown(() => c.close());
  await c.next('session.created');
  return c;
}

const INSTRUCTIONS = 'You are a test agent.'; // 21 characters: 6 text tokens
const WEATHER = { type: 'function', name: 'get_weather', description: 'Weather of a city', parameters: { type: 'object' } };
const userText = (text: string) => ({
  type: 'conversation.item.create',
  item: { type: 'message', role: 'user', content: [{ type: 'input_text', text }] },
});
const withoutDeltas = (evs: Ev[]) => types(evs).filter((x) => x !== 'response.output_audio.delta');

t.test(
  'a voice agent: instructions, a tool, transcripts, a function call and its spoken result, billed on the whole context',
  async (t) => {
    const p = await provider(t);
    const c = await client(t, p);
    c.send({
      type: 'session.update',
      event_id: 'su1',
      session: {
        type: 'realtime',
        instructions: INSTRUCTIONS,
        tools: [WEATHER],
        tool_choice: 'auto',
        audio: { input: { transcription: { model: 'whisper-1' }, noise_reduction: { type: 'near_field' } }, output: { voice: 'marin' } },
      },
    });
    const updated = await c.next('session.updated');
    t.match(updated.session, {
      instructions: INSTRUCTIONS,
      tools: [WEATHER],
      tool_choice: 'auto',
      output_modalities: ['audio'],
      audio: { input: { transcription: { model: 'whisper-1' }, noise_reduction: { type: 'near_field' } }, output: { voice: 'marin' } },
    });

    // Turn 1: audio in, its transcript, the echo and its output transcript.
    for (const f of pcmFrames(Buffer.concat([pcmTone(1000), pcmSilence(500)]))) c.append(f);
    const turn1 = await c.until('response.done');
    const userItem = turn1.find((e) => e.type === 'input_audio_buffer.committed')!.item_id;
    t.same(
      turn1
        .filter((e) => e.type.startsWith('conversation.item.input_audio_transcription'))
        .map((e) => [e.type, e.item_id, e.delta ?? e.transcript]),
      [
        ['conversation.item.input_audio_transcription.delta', userItem, 'speech 1000 ms'],
        ['conversation.item.input_audio_transcription.completed', userItem, 'speech 1000 ms'],
      ],
    );
    t.same(turn1.find((e) => e.type === 'conversation.item.input_audio_transcription.completed')!.usage, {
      type: 'duration',
      seconds: 1.5,
    });
    t.equal(turn1.find((e) => e.type === 'response.output_audio_transcript.done')!.transcript, 'speech 1000 ms');
    const done1 = turn1.at(-1)!;
    // Context: instructions (6 text) + the user's 1500 ms committed (15 audio); nothing cached yet.
    t.same(done1.response.usage, {
      total_tokens: 41,
      input_tokens: 21,
      output_tokens: 20,
      input_token_details: {
        text_tokens: 6,
        audio_tokens: 15,
        image_tokens: 0,
        cached_tokens: 0,
        cached_tokens_details: { text_tokens: 0, audio_tokens: 0, image_tokens: 0 },
      },
      output_token_details: { text_tokens: 0, audio_tokens: 20 },
    });
    const assistant1 = done1.response.output[0];
    t.same(assistant1.content, [{ type: 'output_audio', transcript: 'speech 1000 ms' }]);

    // Turn 2: a text turn that calls the tool: argument deltas, no audio.
    const args = '{"city":"Paris","unit":"celsius"}'; // 33 characters: 9 tokens, 3 deltas
    c.send(userText(`call get_weather ${args}`)); // 50 characters: 13 tokens
    await c.next('conversation.item.done');
    c.send({ type: 'response.create' });
    const turn2 = await c.until('response.done');
    t.same(types(turn2), [
      'response.created',
      'response.output_item.added',
      'conversation.item.added',
      'response.function_call_arguments.delta',
      'response.function_call_arguments.delta',
      'response.function_call_arguments.delta',
      'response.function_call_arguments.done',
      'response.output_item.done',
      'conversation.item.done',
      'response.done',
    ]);
    const argsDone = turn2.find((e) => e.type === 'response.function_call_arguments.done')!;
    t.match(argsDone, { name: 'get_weather', arguments: args, call_id: /^call_/ });
    t.equal(
      turn2
        .filter((e) => e.type === 'response.function_call_arguments.delta')
        .map((e) => e.delta)
        .join(''),
      args,
    );
    // Context: instructions 6 + user audio 15 (both cached) + assistant audio 1000 ms (10) + the text (13).
    t.match(turn2.at(-1)!.response.usage, {
      input_tokens: 44,
      output_tokens: 9,
      input_token_details: {
        text_tokens: 19,
        audio_tokens: 25,
        cached_tokens: 21,
        cached_tokens_details: { text_tokens: 6, audio_tokens: 15 },
      },
      output_token_details: { text_tokens: 9, audio_tokens: 0 },
    });

    // Turn 3: the client answers the call; the output is spoken as a tone of 60 ms per character.
    const output = 'Sunny, 21 C'; // 11 characters: 660 ms of tone, 3 text tokens in the context
    c.send({ type: 'conversation.item.create', item: { type: 'function_call_output', call_id: argsDone.call_id, output } });
    await c.next('conversation.item.done');
    c.send({ type: 'response.create' });
    const turn3 = await c.until('response.done');
    t.ok(deltaBytes(turn3).equals(pcmTone(660)), 'a 440 Hz tone, 60 ms per character');
    t.equal(turn3.find((e) => e.type === 'response.output_audio_transcript.done')!.transcript, output);
    // Context: 6 + 15 + 10 + 13 cached (44) + the call's arguments (9) + the output (3).
    t.match(turn3.at(-1)!.response.usage, {
      input_tokens: 56,
      output_tokens: 14,
      input_token_details: {
        text_tokens: 31,
        audio_tokens: 25,
        cached_tokens: 44,
        cached_tokens_details: { text_tokens: 19, audio_tokens: 25 },
      },
      output_token_details: { text_tokens: 0, audio_tokens: 14 },
    });
  },
);

t.test('text mode: replies are output text alone, streamed in deltas, and billed as text', async (t) => {
  const p = await provider(t);
  const c = await client(t, p);
  c.send({ type: 'session.update', session: { type: 'realtime', output_modalities: ['text'] } });
  t.same((await c.next('session.updated')).session.output_modalities, ['text']);
  const text = 'Hello there, how are you today?'; // 31 characters: 8 tokens, 2 deltas
  c.send(userText(text));
  c.send({ type: 'response.create' });
  const evs = await c.until('response.done');
  t.same(types(evs).slice(types(evs).indexOf('response.created')), [
    'response.created',
    'response.output_item.added',
    'conversation.item.added',
    'response.content_part.added',
    'response.output_text.delta',
    'response.output_text.delta',
    'response.output_text.done',
    'response.content_part.done',
    'response.output_item.done',
    'conversation.item.done',
    'response.done',
  ]);
  t.equal(evs.find((e) => e.type === 'response.output_text.done')!.text, text);
  t.same(evs.at(-1)!.response.output[0].content, [{ type: 'output_text', text }]);
  t.match(evs.at(-1)!.response.usage, { input_tokens: 8, output_tokens: 8, output_token_details: { text_tokens: 8, audio_tokens: 0 } });
  t.notOk(
    evs.some((e) => e.type === 'response.output_audio.delta'),
    'no audio',
  );

  // An audio turn in text mode answers its transcript as text.
  for (const f of pcmFrames(Buffer.concat([pcmTone(300), pcmSilence(500)]))) c.append(f);
  const audioTurn = await c.until('response.done');
  t.equal(audioTurn.find((e) => e.type === 'response.output_text.done')!.text, 'speech 300 ms');

  // max_output_tokens cuts the text at 4 characters a token: incomplete.
  c.send(userText(text));
  c.send({ type: 'response.create', response: { max_output_tokens: 2 } });
  const cut = await c.until('response.done');
  t.equal(cut.find((e) => e.type === 'response.output_text.done')!.text, 'Hello th', '2 tokens: 8 characters');
  t.same(cut.at(-1)!.response.status_details, { type: 'incomplete', reason: 'max_output_tokens' });
  t.equal(cut.at(-1)!.response.status, 'incomplete');
});

t.test('tool choice and declared tools decide whether `call` text is a function call', async (t) => {
  const p = await provider(t);
  const c = await client(t, p);
  c.send({ type: 'session.update', session: { type: 'realtime', output_modalities: ['text'], tools: [WEATHER] } });
  await c.next('session.updated');
  const ask = async (text: string, response?: Record<string, unknown>) => {
    c.send(userText(text));
    c.send({ type: 'response.create', ...(response ? { response } : {}) });
    const evs = await c.until('response.done');
    return evs.at(-1)!.response.output[0].type as string;
  };
  t.equal(await ask('call get_weather {"city":"Oslo"}'), 'function_call');
  t.equal(await ask('call get_time {}'), 'message', 'undeclared tool: echoed');
  t.equal(await ask('call get_weather {not json'), 'message', 'invalid JSON: echoed');
  t.equal(await ask('call get_weather {}', { tool_choice: 'none' }), 'message', 'tool_choice none');
  t.equal(await ask('call get_weather {}', { tool_choice: { type: 'function', name: 'other' } }), 'message', 'another tool forced');
  t.equal(await ask('call get_time {}', { tools: [{ ...WEATHER, name: 'get_time' }] }), 'function_call', 'tools of the response');
});

t.test('conversation items: create (positioned), retrieve, delete, and refusals naming the field', async (t) => {
  const p = await provider(t);
  const c = await client(t, p);
  c.send({ ...userText('first'), event_id: 'e1' });
  const added = await c.next('conversation.item.added');
  t.same(added.previous_item_id, null);
  const first = added.item.id as string;
  t.same((await c.next('conversation.item.done')).item, {
    id: first,
    object: 'realtime.item',
    type: 'message',
    role: 'user',
    status: 'completed',
    content: [{ type: 'input_text', text: 'first' }],
  });
  c.send({
    type: 'conversation.item.create',
    item: { id: 'sys_1', type: 'message', role: 'system', content: [{ type: 'input_text', text: 'Be brief.' }] },
    previous_item_id: 'root',
  });
  t.same((await c.next('conversation.item.added')).previous_item_id, null, 'root: first in the conversation');
  c.send({
    type: 'conversation.item.create',
    item: { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'ok' }] },
    previous_item_id: 'sys_1',
  });
  t.equal((await c.next('conversation.item.added')).previous_item_id, 'sys_1');
  c.send({ type: 'conversation.item.retrieve', item_id: 'sys_1' });
  t.same((await c.next('conversation.item.retrieved')).item.content, [{ type: 'input_text', text: 'Be brief.' }]);
  c.send({ type: 'conversation.item.delete', item_id: first });
  t.equal((await c.next('conversation.item.deleted')).item_id, first);

  const refusals: [Record<string, unknown>, string, string][] = [
    [{ type: 'conversation.item.delete', item_id: first }, 'item_not_found', 'item_id'],
    [{ type: 'conversation.item.retrieve', item_id: 'nope' }, 'item_not_found', 'item_id'],
    [{ ...userText('x'), previous_item_id: 'nope' }, 'item_not_found', 'previous_item_id'],
    [
      {
        type: 'conversation.item.create',
        item: { id: 'sys_1', type: 'message', role: 'system', content: [{ type: 'input_text', text: 'again' }] },
      },
      'item_already_exists',
      'item.id',
    ],
    [{ type: 'conversation.item.truncate', item_id: 'sys_1', content_index: 0, audio_end_ms: 0 }, 'item_not_found', 'item_id'],
  ];
  for (const [i, [event, code, param]] of refusals.entries()) {
    c.send({ ...event, event_id: `r${i}` });
    t.match((await c.next('error')).error, { code, param, event_id: `r${i}` }, code);
  }
  c.send({ type: 'conversation.item.create', item: { type: 'message', role: 'user', content: [{ type: 'input_image', image_url: 'x' }] } });
  t.equal((await c.next('error')).error.code, 'invalid_event', 'an unsupported content part');
});

t.test('input_audio items are turns; out-of-band responses stay out of the conversation', async (t) => {
  const p = await provider(t);
  const c = await client(t, p);
  c.send({ type: 'session.update', session: { type: 'realtime', audio: { input: { transcription: {} } } } });
  await c.next('session.updated');
  const audio = pcmTone(200);
  c.send({
    type: 'conversation.item.create',
    item: { type: 'message', role: 'user', content: [{ type: 'input_audio', audio: audio.toString('base64') }] },
  });
  const added = await c.next('conversation.item.added');
  t.same(added.item.content, [{ type: 'input_audio' }], 'audio bytes are not kept');
  t.equal((await c.next('conversation.item.input_audio_transcription.completed')).transcript, 'speech 200 ms');
  c.send({ type: 'response.create', response: { conversation: 'none', output_modalities: ['text'], instructions: 'Summarize.' } });
  const oob = await c.until('response.done');
  t.notOk(
    oob.some((e) => e.type.startsWith('conversation.item')),
    'no conversation item',
  );
  t.match(oob.at(-1)!.response.usage, { input_tokens: 3, input_token_details: { text_tokens: 3, audio_tokens: 0 } }, 'instructions only');
  t.equal(oob.find((e) => e.type === 'response.output_text.done')!.text, 'speech 200 ms');
  c.send({ type: 'response.create' });
  const inBand = await c.until('response.done');
  t.ok(deltaBytes(inBand).equals(audio), 'the turn is still pending for the conversation');
  t.match(inBand.at(-1)!.response.usage, { input_tokens: 2, input_token_details: { audio_tokens: 2, cached_tokens: 0 } });

  // null turns transcription (and noise reduction) off, as the API reference says.
  c.send({ type: 'session.update', session: { type: 'realtime', audio: { input: { transcription: null, noise_reduction: null } } } });
  const off = await c.next('session.updated');
  t.notOk('transcription' in off.session.audio.input, 'no transcription');
  c.send({
    type: 'conversation.item.create',
    item: { type: 'message', role: 'user', content: [{ type: 'input_audio', audio: audio.toString('base64') }] },
  });
  c.send({ type: 'response.create' });
  const untranscribed = await c.until('response.done');
  t.notOk(
    untranscribed.some((e) => e.type.startsWith('conversation.item.input_audio_transcription')),
    'no transcript',
  );
});

t.test('session.update is atomic and refuses what it cannot do, naming the field', async (t) => {
  const p = await provider(t, { replyChunkIntervalMs: 60_000 });
  const c = await client(t, p);
  c.send({
    type: 'session.update',
    event_id: 'd1',
    session: { type: 'realtime', instructions: 'changed', tools: [WEATHER, WEATHER] },
  });
  t.match((await c.next('error')).error, { code: 'invalid_value', param: 'session.tools[1].name', event_id: 'd1' });
  c.send({
    type: 'session.update',
    session: { type: 'realtime', audio: { input: { turn_detection: { type: 'semantic_vad', eagerness: 'high' } } } },
  });
  const updated = await c.next('session.updated');
  t.equal(updated.session.instructions, '', 'the refused update changed nothing');
  t.same(updated.session.audio.input.turn_detection, { type: 'semantic_vad', eagerness: 'high' });
  // semantic_vad "high": a turn ends after 250 ms of silence.
  for (const f of pcmFrames(Buffer.concat([pcmTone(300), pcmSilence(250)]))) c.append(f);
  await c.next('response.output_audio.delta');
  c.send({ type: 'session.update', event_id: 'v1', session: { type: 'realtime', audio: { output: { voice: 'cedar' } } } });
  t.match((await c.next('error')).error, { code: 'cannot_update_voice', param: 'session.audio.output.voice', event_id: 'v1' });
  c.send({ type: 'output_audio_buffer.clear' });
  const cleared = await c.until('output_audio_buffer.cleared');
  t.same(withoutDeltas(cleared), ['response.output_item.done', 'conversation.item.done', 'response.done', 'output_audio_buffer.cleared']);
});

t.test('connection cap: a warning ahead, then error session_expired and close 1001 with OpenAI\u2019s reason', async (t) => {
  const p = await provider(t, { maxConnectionMs: 400, capWarningMs: 150 });
  const c = await client(t, p);
  const closed = new Promise<[number, string]>((resolve) => c.ws.once('close', (code, reason) => resolve([code, reason.toString()])));
  const warning = await c.next('error');
  t.same(warning.error, {
    type: 'invalid_request_error',
    code: 'session_expiring',
    message: 'Your session reaches its maximum duration of 400 ms and ends in 150 ms.',
    param: null,
    event_id: null,
  });
  const expired = await c.next('error');
  t.equal(expired.error.code, 'session_expired');
  t.equal(expired.error.message, 'Your session hit the maximum duration of 400 ms.');
  t.same(await closed, [1001, 'Your session hit the maximum duration of 400 ms.']);
});

t.test('refusing connections plays an outage; a cap sends no warning unless asked', async (t) => {
  const p = await provider(t, { refuseConnections: true });
  const refused = await TestClient.refusal(`${p.url}?model=m`);
  t.equal(refused.status, 503);
  t.match(JSON.parse(refused.body), { error: { type: 'server_error', code: 'service_unavailable' } });
  p.refuseConnections(false);
  const c = await client(t, p);
  p.refuseConnections(true);
  t.equal((await TestClient.refusal(`${p.url}?model=m`)).status, 503, 'new connections refused');
  c.send({ type: 'input_audio_buffer.clear' });
  await c.next('input_audio_buffer.cleared');
  t.equal(p.connections(), 1, 'live connections are not touched');

  const capped = await provider(t, { maxConnectionMs: 60_000 * 60 });
  const d = await client(t, capped);
  t.equal(d.events.length, 1, 'no warning by default');
});
