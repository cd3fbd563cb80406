import t from 'tap';
import { ServerEvent } from '@s2s/contract';
import { Audio } from '../src/audio.js';
import { DEFAULT_SETTINGS, type ConversationItem } from '../src/agent/types.js';
import type { InternalServerEvent } from '../src/codecs/events.js';
import { SvcRealtimeV1Codec, wireParamOf } from '../src/codecs/svc-realtime-v1/codec.js';

const text = (v: unknown) => Buffer.from(JSON.stringify(v));
const pcm = Buffer.from([1, 0, 2, 0]);

t.test('decode: the voice-agent client events into the neutral model', async (t) => {
  const c = new SvcRealtimeV1Codec();
  t.same(
    c.decode(
      text({
        type: 'session.update',
        event_id: 'u1',
        session: {
          instructions: 'Be brief.',
          tools: [{ type: 'function', name: 'get_weather', description: 'd', parameters: { type: 'object', properties: {} } }],
          tool_choice: { type: 'function', name: 'get_weather' },
          output_modalities: ['text'],
          max_output_tokens: 'inf',
          turn_detection: { type: 'semantic_vad', eagerness: 'low', create_response: false },
          audio: { input: { transcription: { model: 'whisper-1', language: 'en' }, noise_reduction: { type: 'near_field' } } },
        },
      }),
      false,
    ),
    {
      type: 'session.update',
      eventId: 'u1',
      update: {
        instructions: 'Be brief.',
        tools: [{ name: 'get_weather', description: 'd', parameters: { type: 'object', properties: {} } }],
        toolChoice: { type: 'function', name: 'get_weather' },
        outputModalities: ['text'],
        maxOutputTokens: 'inf',
        turnDetection: { type: 'semantic_vad', eagerness: 'low', createResponse: false },
        inputTranscription: { model: 'whisper-1', language: 'en' },
        noiseReduction: { type: 'near_field' },
      },
    },
  );
  t.same(c.decode(text({ type: 'session.update', session: { turn_detection: null, audio: { input: { transcription: null } } } }), false), {
    type: 'session.update',
    eventId: undefined,
    update: { turnDetection: null, inputTranscription: null },
  });
  t.same(c.decode(text({ type: 'response.create', response: { conversation: 'none', instructions: 'x' } }), false), {
    type: 'response.create',
    eventId: undefined,
    options: { instructions: 'x', conversation: 'none' },
  });
  const created = c.decode(
    text({
      type: 'conversation.item.create',
      event_id: 'i1',
      previous_item_id: 'root',
      item: {
        type: 'message',
        role: 'user',
        content: [
          { type: 'input_text', text: 'hi' },
          { type: 'input_audio', audio: pcm.toString('base64') },
        ],
      },
    }),
    false,
  );
  t.match(created, { type: 'item.create', eventId: 'i1', previousItemId: 'root', item: { type: 'message', role: 'user' } });
  t.ok(created.type === 'item.create' && created.item.type === 'message' && created.item.content[1]!.type === 'input_audio');
  t.same(c.decode(text({ type: 'conversation.item.create', item: { type: 'function_call_output', call_id: 'c1', output: '{}' } }), false), {
    type: 'item.create',
    eventId: undefined,
    previousItemId: undefined,
    item: { type: 'function_call_output', callId: 'c1', output: '{}' },
  });
  t.same(c.decode(text({ type: 'conversation.item.delete', item_id: 'item_1' }), false), {
    type: 'item.delete',
    eventId: undefined,
    itemId: 'item_1',
  });
  t.same(c.decode(text({ type: 'conversation.item.retrieve', item_id: 'item_1' }), false), {
    type: 'item.retrieve',
    eventId: undefined,
    itemId: 'item_1',
  });
  t.same(c.decode(text({ type: 'conversation.item.truncate', item_id: 'item_1', content_index: 0, audio_end_ms: 300 }), false), {
    type: 'item.truncate',
    eventId: undefined,
    itemId: 'item_1',
    contentIndex: 0,
    audioEndMs: 300,
  });
  t.same(c.decode(text({ type: 'output_audio_buffer.clear', event_id: 'o' }), false), { type: 'output.clear', eventId: 'o' });
});

t.test('decode: refusals name the offending field in the dialect and echo the event_id', async (t) => {
  const c = new SvcRealtimeV1Codec();
  const cases: [unknown, string, string][] = [
    [
      { type: 'session.update', event_id: 'e', session: { tools: [{ type: 'function', description: 'no name' }] } },
      'invalid_event',
      'session.tools[0].name',
    ],
    [{ type: 'session.update', event_id: 'e', session: { model: 'x' } }, 'invalid_event', 'session.model'],
    [
      { type: 'session.update', event_id: 'e', session: { turn_detection: { type: 'magic' } } },
      'invalid_event',
      'session.turn_detection.type',
    ],
    [
      { type: 'session.update', event_id: 'e', session: { output_modalities: ['audio', 'text'] } },
      'invalid_event',
      'session.output_modalities',
    ],
    [
      {
        type: 'conversation.item.create',
        event_id: 'e',
        item: { type: 'message', role: 'user', content: [{ type: 'input_image', image_url: 'x' }] },
      },
      'invalid_event',
      'item.content[0].type',
    ],
    [
      {
        type: 'conversation.item.create',
        event_id: 'e',
        item: { type: 'message', role: 'user', content: [{ type: 'input_audio', audio: 'AQID' }] },
      },
      'invalid_audio_format',
      'item.content[0].audio',
    ],
    [
      { type: 'conversation.item.truncate', event_id: 'e', item_id: 'i', content_index: -1, audio_end_ms: 0 },
      'invalid_event',
      'content_index',
    ],
    [{ type: 'input_audio_buffer.append', event_id: 'e', audio: 'AQID' }, 'invalid_audio_format', 'audio'],
  ];
  for (const [event, code, param] of cases) {
    const r = c.decode(text(event), false);
    t.match(r, { type: 'refusal', code, eventId: 'e', wireParam: param }, param);
    const wire = JSON.parse(
      c
        .encode({ type: 'error', code: (r as { code: 'invalid_event' }).code, message: 'm', clientEventId: 'e', wireParam: param })
        .toString(),
    );
    t.same(wire.error.param, param);
    t.equal(wire.error.event_id, 'e');
  }
});

t.test('neutral params are written in svc-realtime-v1 positions', async (t) => {
  t.equal(wireParamOf('session.inputTranscription'), 'session.audio.input.transcription');
  t.equal(wireParamOf('session.noiseReduction'), 'session.audio.input.noise_reduction');
  t.equal(wireParamOf('session.turnDetection'), 'session.turn_detection');
  t.equal(wireParamOf('session.tools[3].parameters'), 'session.tools[3].parameters');
  t.equal(wireParamOf('item.callId'), 'item.call_id');
  t.equal(wireParamOf('itemId'), 'item_id');
  t.equal(wireParamOf('previousItemId'), 'previous_item_id');
});

t.test('encode: every voice-agent server event is a valid ServerEvent with gateway ids', async (t) => {
  const c = new SvcRealtimeV1Codec();
  const place = { responseId: 'resp_1', itemId: 'item_2', outputIndex: 0, contentIndex: 0 };
  const msg: ConversationItem = {
    id: 'item_1',
    type: 'message',
    role: 'user',
    status: 'completed',
    content: [{ type: 'input_audio', transcript: 'speech 900 ms' }],
  };
  const call: ConversationItem = { id: 'item_3', type: 'function_call', status: 'completed', callId: 'call_1', name: 'f', arguments: '{}' };
  const events: InternalServerEvent[] = [
    {
      type: 'session.updated',
      settings: { ...DEFAULT_SETTINGS, instructions: 'x', tools: [{ name: 'f', parameters: { type: 'object' } }] },
    },
    { type: 'input.committed', itemId: 'item_1', previousItemId: null },
    { type: 'input.cleared' },
    { type: 'item.added', item: msg, previousItemId: null },
    { type: 'item.done', item: call, previousItemId: 'item_1' },
    { type: 'item.retrieved', item: { id: 'item_4', type: 'function_call_output', status: 'completed', callId: 'call_1', output: 'ok' } },
    { type: 'item.deleted', itemId: 'item_1' },
    { type: 'item.truncated', itemId: 'item_2', contentIndex: 0, audioEndMs: 120 },
    { type: 'transcript.delta', itemId: 'item_1', contentIndex: 0, delta: 'spe' },
    { type: 'transcript.completed', itemId: 'item_1', contentIndex: 0, transcript: 'speech 900 ms' },
    { type: 'transcript.failed', itemId: 'item_1', contentIndex: 0, message: 'm' },
    { type: 'output_item.added', responseId: 'resp_1', outputIndex: 0, item: call },
    { type: 'output_item.done', responseId: 'resp_1', outputIndex: 0, item: call },
    { type: 'content_part.added', ...place, part: { type: 'output_audio', transcript: null } },
    { type: 'content_part.done', ...place, part: { type: 'output_text', text: 'hi' } },
    { type: 'text.delta', ...place, delta: 'h' },
    { type: 'text.done', ...place, text: 'hi' },
    { type: 'audio_transcript.delta', ...place, delta: 'h' },
    { type: 'audio_transcript.done', ...place, transcript: 'hi' },
    { type: 'call_arguments.delta', responseId: 'resp_1', itemId: 'item_3', outputIndex: 0, callId: 'call_1', delta: '{' },
    { type: 'call_arguments.done', responseId: 'resp_1', itemId: 'item_3', outputIndex: 0, callId: 'call_1', name: 'f', arguments: '{}' },
    { type: 'response.audio.delta', place, audio: Audio.ofPcm(pcm) },
    { type: 'response.audio.done', ...place },
    { type: 'error', code: 'item_not_found', message: 'm', clientEventId: 'c', param: 'itemId' },
  ];
  for (const e of events) {
    const json = JSON.parse(c.encode(e).toString());
    const parsed = ServerEvent.safeParse(json);
    t.ok(parsed.success, `${e.type}: ${parsed.success ? '' : parsed.error.message}`);
  }
  const err = JSON.parse(c.encode(events.at(-1)!).toString());
  t.same(err.error, { type: 'invalid_request_error', code: 'item_not_found', message: 'm', param: 'item_id', event_id: 'c' });
  const updated = JSON.parse(c.encode(events[0]!).toString());
  t.same(updated.session.tools, [{ type: 'function', name: 'f', parameters: { type: 'object' } }]);
  t.equal(updated.session.turn_detection.type, 'server_vad');
});
