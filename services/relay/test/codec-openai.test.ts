// The OpenAI-compatible dialect's codec (decisions.md, "The OpenAI-compatible dialect"): every client event
// into the internal model, every refusal naming its GA param, every server event in OpenAI's GA shape.
import t from 'tap';
import { Audio } from '../src/audio.js';
import { DEFAULT_SETTINGS, applySettings, type ConversationItem } from '../src/agent/types.js';
import type { InternalClientEvent, InternalServerEvent } from '../src/codecs/events.js';
import { gaParamOf, gaSessionUpdate, gaUsage, OpenAIGaCodec } from '../src/codecs/openai/codec.js';
import type {
  RealtimeSessionCreateRequest,
  ResponseContentPartAddedEvent,
  ResponseTextDeltaEvent,
} from 'openai/resources/realtime/realtime';
import type { ContentPart } from '../src/agent/types.js';
import type { OutputPlace } from '../src/codecs/events.js';
import { partView, place, SvcRealtimeV1Codec } from '../src/codecs/svc-realtime-v1/codec.js';
import { EventIds } from '../src/hot/event-ids.js';
import { Conversation } from '../src/agent/conversation.js';
import { openAITokens } from '../src/providers/openai/protocol.js';

const text = (v: unknown) => Buffer.from(JSON.stringify(v));
const WHO = { id: 'vs_abc', model: 'openai/gpt-realtime' };
const codec = () => new OpenAIGaCodec(WHO);
const json = (frame: string | Buffer) => JSON.parse(frame.toString()) as Record<string, any>;

/** What @openai/agents-realtime 0.20 sends on connect (its defaults plus an agent's instructions and a tool). */
const SDK_SESSION = {
  type: 'realtime',
  instructions: 'Be brief.',
  model: 'gpt-realtime-2.1',
  output_modalities: ['audio'],
  audio: {
    input: {
      format: { type: 'audio/pcm', rate: 24000 },
      noise_reduction: null,
      transcription: { model: 'gpt-4o-mini-transcribe' },
      turn_detection: { type: 'semantic_vad' },
    },
    output: { format: { type: 'audio/pcm', rate: 24000 }, voice: 'marin', speed: 1 },
  },
  tools: [{ type: 'function', name: 'lookup', description: 'd', parameters: { type: 'object', properties: {} } }],
};

t.test('decode: a GA session.update (the SDK defaults) into the neutral settings; model and tracing ignored', async (t) => {
  const c = codec();
  t.same(c.decode(text({ type: 'session.update', event_id: 'u1', session: SDK_SESSION }), false), {
    type: 'session.update',
    eventId: 'u1',
    update: {
      voice: 'marin',
      instructions: 'Be brief.',
      tools: [{ name: 'lookup', description: 'd', parameters: { type: 'object', properties: {} } }],
      outputModalities: ['audio'],
      turnDetection: { type: 'semantic_vad' },
      inputTranscription: { model: 'gpt-4o-mini-transcribe' },
      noiseReduction: null,
      formats: { input: 'pcm16', output: 'pcm16' },
    },
  });
  t.same(
    c.decode(
      text({
        type: 'session.update',
        session: {
          type: 'realtime',
          model: 'some-other-model',
          tracing: 'auto',
          prompt: { id: 'p' },
          include: ['item.input_audio_transcription.logprobs'],
          tool_choice: 'required',
          max_output_tokens: 100,
          audio: {
            input: {
              turn_detection: {
                type: 'server_vad',
                threshold: 0.4,
                prefix_padding_ms: 200,
                silence_duration_ms: 600,
                create_response: false,
                interrupt_response: false,
                idle_timeout_ms: null,
              },
              noise_reduction: { type: 'far_field' },
              transcription: { model: 'whisper-1', language: 'en', prompt: 'p' },
            },
          },
        },
      }),
      false,
    ),
    {
      type: 'session.update',
      eventId: undefined,
      update: {
        toolChoice: 'required',
        maxOutputTokens: 100,
        turnDetection: {
          type: 'server_vad',
          threshold: 0.4,
          prefixPaddingMs: 200,
          silenceDurationMs: 600,
          createResponse: false,
          interruptResponse: false,
        },
        inputTranscription: { model: 'whisper-1', language: 'en', prompt: 'p' },
        noiseReduction: { type: 'far_field' },
        prompt: { id: 'p' },
        include: ['item.input_audio_transcription.logprobs'],
      },
    },
    'model and tracing change nothing; prompt and include are decoded (checked against the provider after)',
  );
  t.same(c.decode(text({ type: 'session.update', session: { type: 'realtime', tracing: null } }), false), {
    type: 'session.update',
    eventId: undefined,
    update: {},
  });
  t.same(
    c.decode(
      text({ type: 'session.update', session: { type: 'realtime', audio: { input: { turn_detection: null, transcription: null } } } }),
      false,
    ),
    { type: 'session.update', eventId: undefined, update: { turnDetection: null, inputTranscription: null } },
  );
});

t.test('decode: every other client event has the positions of svc-realtime-v1', async (t) => {
  const c = codec();
  const svc = new SvcRealtimeV1Codec();
  const events = [
    { type: 'input_audio_buffer.append', event_id: 'a', audio: Buffer.from([1, 0, 2, 0]).toString('base64') },
    { type: 'input_audio_buffer.commit', event_id: 'c' },
    { type: 'input_audio_buffer.clear' },
    { type: 'output_audio_buffer.clear', event_id: 'o' },
    { type: 'response.create' },
    { type: 'response.create', response: { instructions: 'x', output_modalities: ['text'], conversation: 'none' } },
    { type: 'response.cancel', event_id: 'x' },
    { type: 'conversation.item.create', item: { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'hi' }] } },
    { type: 'conversation.item.create', previous_item_id: 'root', item: { type: 'function_call_output', call_id: 'call_1', output: '{}' } },
    { type: 'conversation.item.delete', item_id: 'item_1' },
    { type: 'conversation.item.retrieve', item_id: 'item_1' },
    { type: 'conversation.item.truncate', item_id: 'item_1', content_index: 0, audio_end_ms: 640 },
  ];
  for (const e of events) {
    const got = c.decode(text(e), false);
    t.not(got.type, 'refusal', e.type);
    t.same(got, svc.decode(text(e), false), e.type);
  }
  const append = c.decode(text(events[0]), false);
  t.match(append, { type: 'audio.append', eventId: 'a' });
  if (append.type === 'audio.append') t.same(append.audio.pcm, Buffer.from([1, 0, 2, 0]));
  t.same(c.decode(text(events[11]), false), {
    type: 'item.truncate',
    eventId: undefined,
    itemId: 'item_1',
    contentIndex: 0,
    audioEndMs: 640,
  });
});

t.test('decode: refusals name the GA param and echo the event_id', async (t) => {
  const c = codec();
  const session = (s: Record<string, unknown>) => text({ type: 'session.update', event_id: 'e1', session: { type: 'realtime', ...s } });
  const cases: [Buffer, string, string][] = [
    [session({ audio: { input: { format: { type: 'audio/opus' } } } }), 'invalid_audio_format', 'session.audio.input.format'],
    [session({ audio: { output: { format: { type: 'audio/pcmu', rate: 8000 } } } }), 'invalid_audio_format', 'session.audio.output.format'],
    [session({ audio: { input: { format: { type: 'audio/pcm', rate: 16000 } } } }), 'invalid_audio_format', 'session.audio.input.format'],
    [
      session({ tools: [{ type: 'mcp', server_label: 'x', server_url: 'https://mcp.example' }] }),
      'unsupported_parameter',
      'session.tools[0]',
    ],
    [session({ temperature: 0.7 }), 'unsupported_parameter', 'session.temperature'],
    [session({ reasoning: { effort: 'extreme' } }), 'invalid_event', 'session.reasoning.effort'],
    [session({ truncation: 'sometimes' }), 'invalid_event', 'session.truncation'],
    [session({ reasoning: { effort: 'low', summary: 'auto' } }), 'unsupported_parameter', 'session.reasoning.summary'],
    [session({ voice: 'marin' }), 'unsupported_parameter', 'session.voice'],
    [session({ audio: { output: { speed: 1.25 } } }), 'unsupported_parameter', 'session.audio.output.speed'],
    [
      session({ audio: { input: { turn_detection: { type: 'server_vad', idle_timeout_ms: 5000 } } } }),
      'unsupported_parameter',
      'session.audio.input.turn_detection.idle_timeout_ms',
    ],
    [session({ output_modalities: ['audio', 'text'] }), 'invalid_event', 'session.output_modalities'],
    [text({ type: 'session.update', event_id: 'e1', session: { instructions: 'x' } }), 'invalid_event', 'session.type'],
    [
      text({
        type: 'conversation.item.create',
        event_id: 'e1',
        item: {
          type: 'message',
          role: 'user',
          content: [
            { type: 'input_text', text: 'see' },
            { type: 'input_image', image_url: 'data:' },
          ],
        },
      }),
      'unsupported_parameter',
      'item.content[1]',
    ],
    [text({ type: 'input_audio_buffer.append', event_id: 'e1', audio: 'UklGRgAAAABXQVZF' }), 'invalid_audio_format', 'audio'],
    [text({ type: 'conversation.item.truncate', event_id: 'e1', item_id: 'i', content_index: 0 }), 'invalid_event', 'audio_end_ms'],
    [text({ type: 'no.such.event', event_id: 'e1' }), 'invalid_event', 'type'],
  ];
  for (const [frame, code, param] of cases) {
    const r = c.decode(frame, false);
    t.match(r, { type: 'refusal', code, eventId: 'e1', wireParam: param }, frame.toString());
    // The refusal reaches the client as an OpenAI error event naming the same param.
    if (r.type === 'refusal') {
      const e = json(c.encode({ type: 'error', code: r.code, message: r.message, clientEventId: r.eventId, wireParam: r.wireParam }));
      t.match(e, { type: 'error', error: { type: 'invalid_request_error', code, param, event_id: 'e1' } });
    }
  }
  t.match(c.decode(Buffer.from('not json'), false), { type: 'refusal', code: 'invalid_event' });
  t.match(c.decode(Buffer.from([1, 2]), true), { type: 'refusal', code: 'invalid_event' });
});

t.test('neutral params are written in GA positions', async (t) => {
  t.equal(gaParamOf('session.voice'), 'session.audio.output.voice');
  t.equal(gaParamOf('session.turnDetection.eagerness'), 'session.audio.input.turn_detection.eagerness');
  t.equal(gaParamOf('session.inputTranscription.model'), 'session.audio.input.transcription.model');
  t.equal(gaParamOf('session.noiseReduction'), 'session.audio.input.noise_reduction');
  t.equal(gaParamOf('session.tools[2].parameters'), 'session.tools[2].parameters');
  t.equal(gaParamOf('item.callId'), 'item.call_id');
  t.equal(gaParamOf('itemId'), 'item_id');
  const c = codec();
  t.same(json(c.encode({ type: 'error', code: 'unsupported_parameter', message: 'm', clientEventId: 'u', param: 'session.voice' })).error, {
    type: 'invalid_request_error',
    code: 'unsupported_parameter',
    message: 'm',
    param: 'session.audio.output.voice',
    event_id: 'u',
  });
  t.same(json(c.encode({ type: 'error', code: 'internal_error', message: 'm' })).error, {
    type: 'internal_error',
    code: 'internal_error',
    message: 'm',
    param: null,
    event_id: null,
  });
});

t.test('a client secret stored settings become the opening session.update', async (t) => {
  t.same(gaSessionUpdate({ instructions: 'Hi', audio: { output: { voice: 'cedar' } } }, undefined), {
    type: 'session.update',
    eventId: undefined,
    update: { voice: 'cedar', instructions: 'Hi' },
  });
  t.match(gaSessionUpdate({ audio: { output: { speed: 0.5 } } }, undefined), {
    type: 'refusal',
    code: 'unsupported_parameter',
    wireParam: 'session.audio.output.speed',
  });
});

t.test('encode: output audio in `delta` with its item, output and content index', async (t) => {
  const c = codec();
  const place = { responseId: 'resp_1', itemId: 'item_1', outputIndex: 0, contentIndex: 0 };
  const pcm = Buffer.from([1, 0, 2, 0, 3, 0]);
  const a = c.encode({ type: 'response.audio.delta', place, audio: Audio.ofPcm(pcm) });
  t.ok(Buffer.isBuffer(a), 'a Buffer for the socket');
  const first = json(a);
  t.match(first, {
    type: 'response.output_audio.delta',
    response_id: 'resp_1',
    item_id: 'item_1',
    output_index: 0,
    content_index: 0,
    delta: pcm.toString('base64'),
  });
  t.notOk('audio' in first, 'no svc `audio` member');
  t.match(
    json(c.encode({ type: 'response.audio.delta', place: { ...place, itemId: 'item_"2', outputIndex: 1 }, audio: Audio.ofPcm(pcm) })),
    {
      item_id: 'item_"2',
      output_index: 1,
    },
  );
  const b = json(c.encode({ type: 'response.audio.delta', place, audio: Audio.ofPcm(pcm) }));
  t.not(b.event_id, first.event_id, 'fresh event ids');
  t.match(json(c.encode({ type: 'response.audio.done', ...place })), {
    type: 'response.output_audio.done',
    response_id: 'resp_1',
    item_id: 'item_1',
    output_index: 0,
    content_index: 0,
  });
});

t.test('encode: session.created and session.updated carry the OpenAI-shaped session with the effective settings', async (t) => {
  const c = codec();
  const settings = applySettings(DEFAULT_SETTINGS, {
    voice: 'marin',
    instructions: 'Be brief.',
    tools: [{ name: 'lookup', parameters: { type: 'object' } }],
    inputTranscription: { model: 'whisper-1' },
    turnDetection: { type: 'server_vad', createResponse: false },
  });
  const session = {
    id: 'vs_abc',
    object: 'voice.session',
    model: 'openai/gpt-realtime',
    expires_at: 1234,
  } as unknown as Extract<InternalServerEvent, { type: 'session.created' }>['session'];
  const created = json(c.encode({ type: 'session.created', session, settings }));
  t.same(created.session, {
    type: 'realtime',
    object: 'realtime.session',
    id: 'vs_abc',
    model: 'openai/gpt-realtime',
    output_modalities: ['audio'],
    instructions: 'Be brief.',
    tools: [{ type: 'function', name: 'lookup', parameters: { type: 'object' } }],
    tool_choice: 'auto',
    max_output_tokens: 'inf',
    audio: {
      input: {
        format: { type: 'audio/pcm', rate: 24000 },
        turn_detection: { type: 'server_vad', create_response: false, interrupt_response: true },
        transcription: { model: 'whisper-1' },
      },
      output: { format: { type: 'audio/pcm', rate: 24000 }, voice: 'marin' },
    },
    tracing: null,
    truncation: 'auto',
    include: [],
    expires_at: 1234,
  });
  const updated = json(c.encode({ type: 'session.updated', settings: { ...DEFAULT_SETTINGS, turnDetection: null } }));
  t.equal(updated.type, 'session.updated');
  t.equal(updated.session.model, 'openai/gpt-realtime', 'the catalog model, whatever the client asked');
  t.equal(updated.session.audio.input.turn_detection, null, 'manual turns');
  t.notOk('voice' in updated.session.audio.output, 'the provider default voice is not named');
  t.match(json(c.encode({ type: 'session.updated', settings: DEFAULT_SETTINGS })).session.audio.input.turn_detection, {
    type: 'server_vad',
    create_response: true,
    interrupt_response: true,
  });
});

t.test("encode: response.done usage in OpenAI's shape, read back exactly by the openai adapter", async (t) => {
  const c = codec();
  const usage = {
    audio_in_ms: 1000,
    audio_out_ms: 2000,
    input_audio_tokens: 12,
    input_text_tokens: 7,
    cached_input_tokens: 30,
    output_audio_tokens: 40,
    output_text_tokens: 5,
    transcribed_ms: 900,
  };
  const done = json(c.encode({ type: 'response.done', responseId: 'resp_1', status: 'completed', usage }));
  t.same(done.response, {
    id: 'resp_1',
    object: 'realtime.response',
    status: 'completed',
    usage: {
      total_tokens: 94,
      input_tokens: 49,
      output_tokens: 45,
      input_token_details: {
        audio_tokens: 12,
        text_tokens: 37,
        cached_tokens: 30,
        cached_tokens_details: { audio_tokens: 0, text_tokens: 30 },
      },
      output_token_details: { audio_tokens: 40, text_tokens: 5 },
    },
  });
  for (const u of [usage, { ...usage, cached_input_tokens: 0 }, { ...usage, input_text_tokens: 0, input_audio_tokens: 0 }]) {
    t.same(
      openAITokens(gaUsage(u), u.transcribed_ms),
      {
        inputAudioTokens: u.input_audio_tokens,
        inputTextTokens: u.input_text_tokens,
        cachedInputTokens: u.cached_input_tokens,
        outputAudioTokens: u.output_audio_tokens,
        outputTextTokens: u.output_text_tokens,
        transcribedMs: u.transcribed_ms,
      },
      'round trip',
    );
  }
  t.same(json(c.encode({ type: 'response.created', responseId: 'resp_2' })).response, {
    id: 'resp_2',
    object: 'realtime.response',
    status: 'in_progress',
    output: [],
  });
});

t.test('encode: the events both dialects share are the svc codec frames', async (t) => {
  const ids = () => {
    const e = new EventIds();
    return e;
  };
  const item: ConversationItem = {
    id: 'item_1',
    type: 'message',
    role: 'assistant',
    status: 'completed',
    content: [{ type: 'output_audio', transcript: 'hi' }],
  };
  const place = { responseId: 'resp_1', itemId: 'item_1', outputIndex: 0, contentIndex: 0 };
  const events: InternalServerEvent[] = [
    { type: 'conversation.created', conversationId: 'conv_1' },
    { type: 'input.committed', itemId: 'item_0', previousItemId: null },
    { type: 'input.cleared' },
    { type: 'item.added', item, previousItemId: null },
    { type: 'item.done', item, previousItemId: 'item_0' },
    { type: 'item.retrieved', item },
    { type: 'item.deleted', itemId: 'item_1' },
    { type: 'item.truncated', itemId: 'item_1', contentIndex: 0, audioEndMs: 640 },
    { type: 'transcript.delta', itemId: 'item_0', contentIndex: 0, delta: 'spe' },
    { type: 'transcript.completed', itemId: 'item_0', contentIndex: 0, transcript: 'speech 1000 ms' },
    { type: 'transcript.failed', itemId: 'item_0', contentIndex: 0, message: 'no' },
    { type: 'output_item.added', responseId: 'resp_1', outputIndex: 0, item },
    { type: 'output_item.done', responseId: 'resp_1', outputIndex: 0, item },
    { type: 'content_part.added', ...place, part: { type: 'output_audio', transcript: null } },
    { type: 'content_part.done', ...place, part: { type: 'output_text', text: 'x' } },
    { type: 'text.delta', ...place, delta: 'x' },
    { type: 'text.done', ...place, text: 'x' },
    { type: 'audio_transcript.delta', ...place, delta: 'h' },
    { type: 'audio_transcript.done', ...place, transcript: 'hi' },
    { type: 'call_arguments.delta', responseId: 'resp_1', itemId: 'item_2', outputIndex: 1, callId: 'call_1', delta: '{' },
    { type: 'call_arguments.done', responseId: 'resp_1', itemId: 'item_2', outputIndex: 1, callId: 'call_1', name: 'f', arguments: '{}' },
  ];
  const ga = new OpenAIGaCodec(WHO, ids());
  const svc = new SvcRealtimeV1Codec(ids());
  for (const e of events) {
    const a = json(ga.encode(e));
    const b = json(svc.encode(e));
    delete a.event_id;
    delete b.event_id;
    t.same(a, b, e.type);
  }
});

t.test('encode: speech events name the user item they become; the conversation keeps that id', async (t) => {
  const c = codec();
  t.match(json(c.encode({ type: 'speech.started', audioStartMs: 20.4, itemId: 'item_a' })), {
    type: 'input_audio_buffer.speech_started',
    audio_start_ms: 20,
    item_id: 'item_a',
  });
  t.match(json(c.encode({ type: 'speech.stopped', audioEndMs: 900, itemId: 'item_a' })), {
    type: 'input_audio_buffer.speech_stopped',
    audio_end_ms: 900,
    item_id: 'item_a',
  });
  let n = 0;
  const conv = new Conversation(100, () => `item_${n++}`);
  const keyed = conv.reserve('up_1');
  t.equal(conv.reserve('up_1'), keyed, 'stable until the item exists');
  t.equal(conv.committed('up_1', null).itemId, keyed, 'the committed item takes it');
  t.equal(conv.reserve('up_1'), keyed, 'and keeps it');
  const unnamed = conv.reserve(undefined);
  t.equal(conv.committed('up_2', 'up_1').itemId, unnamed, 'without a provider key: the next committed input');
  t.not(conv.committed('up_3', 'up_2').itemId, unnamed);
});

// Type level: the views both dialects share are OpenAI's published shapes (tsc fails otherwise).
void (partView satisfies (p: ContentPart) => ResponseContentPartAddedEvent['part']);
void (place satisfies (p: OutputPlace) => Pick<ResponseTextDeltaEvent, 'response_id' | 'item_id' | 'output_index' | 'content_index'>);

t.test("decode and encode: the current OpenAI session fields in the openai package's types", async (t) => {
  const c = codec();
  const session = {
    type: 'realtime',
    reasoning: { effort: 'high' },
    parallel_tool_calls: false,
    truncation: { type: 'retention_ratio', retention_ratio: 0.8, token_limits: { post_instructions: 5000 } },
    prompt: { id: 'pmpt_1', version: '2', variables: { city: 'Paris' } },
    include: ['item.input_audio_transcription.logprobs'],
  } satisfies RealtimeSessionCreateRequest;
  const decoded = c.decode(text({ type: 'session.update', event_id: 'f1', session }), false);
  t.same(decoded, {
    type: 'session.update',
    eventId: 'f1',
    update: {
      reasoning: { effort: 'high' },
      parallelToolCalls: false,
      truncation: { type: 'retention_ratio', retentionRatio: 0.8, tokenLimits: { postInstructions: 5000 } },
      prompt: { id: 'pmpt_1', version: '2', variables: { city: 'Paris' } },
      include: ['item.input_audio_transcription.logprobs'],
    },
  });
  for (const truncation of ['auto', 'disabled'] as const) {
    t.match(c.decode(text({ type: 'session.update', session: { type: 'realtime', truncation } }), false), { update: { truncation } });
  }
  t.match(c.decode(text({ type: 'session.update', session: { type: 'realtime', prompt: null } }), false), { update: { prompt: null } });

  const settings = applySettings(DEFAULT_SETTINGS, (decoded as Extract<InternalClientEvent, { type: 'session.update' }>).update);
  const view = json(c.encode({ type: 'session.updated', settings })).session as RealtimeSessionCreateRequest;
  t.same(
    {
      reasoning: view.reasoning,
      parallel_tool_calls: view.parallel_tool_calls,
      truncation: view.truncation,
      prompt: view.prompt,
      include: view.include,
    },
    {
      reasoning: session.reasoning,
      parallel_tool_calls: false,
      truncation: session.truncation,
      prompt: session.prompt,
      include: session.include,
    },
    'session.updated reports them in the same terms',
  );
  const plain = json(c.encode({ type: 'session.updated', settings: DEFAULT_SETTINGS })).session as RealtimeSessionCreateRequest;
  t.same(
    [plain.truncation, plain.include, 'reasoning' in plain, 'prompt' in plain, 'parallel_tool_calls' in plain],
    ['auto', [], false, false, false],
  );
});
