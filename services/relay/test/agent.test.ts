import t from 'tap';
import { ResponseDoneEvent, ServerEvent } from '@s2s/contract';
import { attach, attachUrl, createKey, createModel, eventually, frames, newSession, setupRelay, silence, tone } from './helpers.js';

const WEATHER = {
  type: 'function',
  name: 'get_weather',
  description: 'The weather in a city.',
  parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
};

t.test('a voice agent through the relay: settings in the opening configuration, a tool call answered, transcripts', async (t) => {
  const env = await setupRelay(t);
  await createModel(env.db, { id: 'local/agent', providerModel: 'agent-1' });
  const key = await createKey(env.db, 10_000);
  const s = await newSession(env.db, key, 'local/agent');
  const { client } = await attach(attachUrl(env.url, s.id), key.secret);
  const upstream = (type: string) => env.simEvents.filter((e) => e.event.type === type).map((e) => e.event as Record<string, any>);

  client.send({
    type: 'session.update',
    event_id: 'u1',
    session: {
      voice: 'marin',
      instructions: 'You are a weather bot.',
      tools: [WEATHER],
      audio: { input: { transcription: { model: 'gpt-4o-mini-transcribe' } } },
    },
  });
  const updated = await client.next('session.updated');
  t.match(updated.session, {
    voice: 'marin',
    instructions: 'You are a weather bot.',
    tools: [WEATHER],
    audio: { input: { transcription: {} } },
  });
  const opening = upstream('session.update');
  t.equal(opening.length, 1, 'one opening configuration, before any audio');
  t.match(opening[0]!.session, {
    instructions: 'You are a weather bot.',
    tools: [{ type: 'function', name: 'get_weather' }],
    audio: { output: { voice: 'marin' }, input: { transcription: { model: 'gpt-4o-mini-transcribe' } } },
  });

  // Audio in, transcript out.
  for (const f of frames(Buffer.concat([tone(600), silence(500)]))) client.append(f);
  const committed = await client.next('input_audio_buffer.committed');
  t.match(committed.item_id, /^item_[0-9A-Za-z]{24}$/);
  const transcript = await client.next('conversation.item.input_audio_transcription.completed');
  t.equal(transcript.item_id, committed.item_id);
  t.equal(transcript.transcript, 'speech 600 ms');
  const firstDone = ResponseDoneEvent.parse(await client.next('response.done'));
  t.equal(firstDone.response.status, 'completed');
  const retrieved = await (async () => {
    client.send({ type: 'conversation.item.retrieve', event_id: 'g1', item_id: committed.item_id });
    return client.next('conversation.item.retrieved');
  })();
  t.match(retrieved.item, {
    id: committed.item_id,
    type: 'message',
    role: 'user',
    content: [{ type: 'input_audio', transcript: 'speech 600 ms' }],
  });

  // A text turn asking for the tool: a function call with gateway ids.
  client.send({
    type: 'conversation.item.create',
    event_id: 'c1',
    item: { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'call get_weather {"city":"Paris"}' }] },
  });
  const added = await client.next('conversation.item.added');
  t.match(added.item, { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'call get_weather {"city":"Paris"}' }] });
  t.equal(upstream('conversation.item.create')[0]!.item.id, (added.item as { id: string }).id, 'the gateway id is the upstream id');
  client.send({ type: 'response.create', event_id: 'r1' });
  const args = await client.next('response.function_call_arguments.done');
  t.match(args, { name: 'get_weather', arguments: '{"city":"Paris"}' });
  t.match(args.item_id, /^item_[0-9A-Za-z]{24}$/);
  await client.next('response.done');

  // The client answers the call; the model speaks the result.
  client.send({
    type: 'conversation.item.create',
    event_id: 'c2',
    item: { type: 'function_call_output', call_id: args.call_id, output: 'sunny' },
  });
  await client.next('conversation.item.added');
  client.send({ type: 'response.create', event_id: 'r2' });
  const spoken = await client.next('response.output_audio_transcript.done');
  t.equal(spoken.transcript, 'sunny');
  const done = ResponseDoneEvent.parse(await client.next('response.done'));
  t.equal(done.response.status, 'completed');
  t.ok(done.response.usage.audio_out_ms > 0, 'the answer was spoken');

  for (const e of client.events) t.ok(ServerEvent.safeParse(e).success, `${e.type} matches the contract`);
  t.notMatch(JSON.stringify(client.events), /"item_\d+"|agent-1/, 'no provider id reached the client');
  await client.close();
});

t.test('refusals: error.param, the event_id echoed, the socket open, nothing upstream, nothing billed', async (t) => {
  const env = await setupRelay(t, { AGENT_MAX_INSTRUCTIONS_BYTES: '16' });
  await createModel(env.db, { id: 'local/agent', providerModel: 'agent-1' });
  const key = await createKey(env.db, 10_000);
  const s = await newSession(env.db, key, 'local/agent');
  const { client } = await attach(attachUrl(env.url, s.id), key.secret);
  client.send({ type: 'session.update', event_id: 'open', session: { voice: 'ash' } });
  await client.next('session.updated');
  const before = env.simEvents.length;

  const cases: [unknown, string, string][] = [
    [{ type: 'session.update', event_id: 'e1', session: { instructions: 'x'.repeat(17) } }, 'limit_exceeded', 'session.instructions'],
    [
      { type: 'session.update', event_id: 'e2', session: { tools: [{ type: 'function', parameters: {} }] } },
      'invalid_event',
      'session.tools[0].name',
    ],
    [
      { type: 'session.update', event_id: 'e3', session: { tools: [{ ...WEATHER, parameters: { type: 'object', properties: 1 } }] } },
      'invalid_value',
      'session.tools[0].parameters',
    ],
    [
      { type: 'conversation.item.create', event_id: 'e4', item: { type: 'function_call_output', call_id: 'call_nope', output: 'x' } },
      'call_id_not_found',
      'item.call_id',
    ],
    [{ type: 'conversation.item.delete', event_id: 'e5', item_id: 'item_nope' }, 'item_not_found', 'item_id'],
    [{ type: 'conversation.item.retrieve', event_id: 'e6', item_id: 'item_nope' }, 'item_not_found', 'item_id'],
    [
      {
        type: 'conversation.item.create',
        event_id: 'e7',
        item: { type: 'message', role: 'user', content: [{ type: 'input_image', image_url: 'x' }] },
      },
      'invalid_event',
      'item.content[0].type',
    ],
    [
      {
        type: 'conversation.item.create',
        event_id: 'e8',
        previous_item_id: 'item_nope',
        item: { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'x' }] },
      },
      'item_not_found',
      'previous_item_id',
    ],
  ];
  for (const [event, code, param] of cases) {
    client.send(event);
    const err = await client.next('error');
    t.match(err.error, { code, param, event_id: (event as { event_id: string }).event_id }, `${code} ${param}`);
  }
  client.send({ type: 'conversation.item.retrieve', event_id: 'ping', item_id: 'item_nope' });
  await client.next('error');
  t.equal(client.ws.readyState, client.ws.OPEN, 'the socket stays open');
  t.equal(env.simEvents.length, before, 'nothing reached the upstream');
  await client.close();
  const final = await eventually(
    () => env.checkpoints.find((c) => c.session_id === s.id && c.final),
    (c) => c !== undefined,
  );
  t.match(final, { audio_in_ms: 0, audio_out_ms: 0, input_audio_tokens: 0, output_audio_tokens: 0 }, 'nothing billed');
});

t.test(
  'truncate and delete an assistant item; the voice cannot change after the first audio output (OpenAI); text-only output',
  async (t) => {
    const env = await setupRelay(t);
    await createModel(env.db, { id: 'local/agent', providerModel: 'agent-1' });
    const key = await createKey(env.db, 10_000);
    const s = await newSession(env.db, key, 'local/agent');
    const { client } = await attach(attachUrl(env.url, s.id), key.secret);
    for (const f of frames(Buffer.concat([tone(300), silence(500)]))) client.append(f);
    const output = await client.next('response.output_item.added');
    const itemId = (output.item as { id: string }).id;
    await client.next('response.done');
    // The assistant's audio item: truncated where the listener stopped, then deleted.
    client.send({ type: 'conversation.item.truncate', event_id: 't', item_id: itemId, content_index: 0, audio_end_ms: 100 });
    t.match(await client.next('conversation.item.truncated'), { item_id: itemId, content_index: 0, audio_end_ms: 100 });
    client.send({ type: 'conversation.item.delete', event_id: 'd', item_id: itemId });
    t.match(await client.next('conversation.item.deleted'), { item_id: itemId });
    client.send({ type: 'conversation.item.retrieve', event_id: 'g', item_id: itemId });
    t.match((await client.next('error')).error, { code: 'item_not_found', param: 'item_id', event_id: 'g' });
    client.send({ type: 'session.update', event_id: 'v', session: { voice: 'cedar' } });
    const err = await client.next('error');
    t.match(err.error, { code: 'unsupported_parameter', param: 'session.voice', event_id: 'v', message: /first audio output/ });
    client.send({ type: 'session.update', event_id: 'm', session: { output_modalities: ['text'] } });
    const updated = await client.next('session.updated');
    t.same((updated.session as { output_modalities: string[] }).output_modalities, ['text']);
    client.send({
      type: 'conversation.item.create',
      item: { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'hello there' }] },
    });
    client.send({ type: 'response.create' });
    const text = await client.next('response.output_text.done');
    t.equal(text.text, 'hello there');
    const done = ResponseDoneEvent.parse(await client.next('response.done'));
    t.equal(done.response.usage.audio_out_ms, 0, 'text only: no audio');
    await client.close();
  },
);
