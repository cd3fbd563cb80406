import { z } from 'zod';
import { AudioFormat } from './audio.js';
import { RealtimeErrorCode } from './errors.js';
import { VoiceSession } from './http.js';

const EventId = z.string().min(1).max(128);
const NonNegInt = z.int().nonnegative();

/**
 * The audio format as a client may write it in session.update: any shape of the right kind, so that a
 * wrong value answers `invalid_audio_format` (checked against AudioFormat) rather than `invalid_event`.
 */
export const AudioFormatInput = z.strictObject({
  type: z.string(),
  encoding: z.string().optional(),
  sample_rate_hz: z.number().optional(),
  rate: z.number().optional(),
  channels: z.number().optional(),
});
export type AudioFormatInput = z.infer<typeof AudioFormatInput>;

export function isSupportedAudioFormat(format: AudioFormatInput): boolean {
  return AudioFormat.safeParse(format).success;
}

// ---- Voice-agent building blocks (decisions.md, "The full realtime event model") ----

/** Function names as OpenAI accepts them. */
export const ToolName = z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, 'must be 1-64 letters, digits, _ or -');

/** A function tool the client executes. `parameters` is a JSON Schema object (checked by the relay). */
export const FunctionToolDef = z.strictObject({
  type: z.literal('function'),
  name: ToolName,
  description: z.string().optional(),
  parameters: z.record(z.string(), z.unknown()).optional(),
});
export type FunctionToolDef = z.infer<typeof FunctionToolDef>;

export const ToolChoiceDef = z.union([
  z.enum(['auto', 'none', 'required']),
  z.strictObject({ type: z.literal('function'), name: ToolName }),
]);
export type ToolChoiceDef = z.infer<typeof ToolChoiceDef>;

export const OutputModalities = z.union([z.tuple([z.literal('audio')]), z.tuple([z.literal('text')])]);
export type OutputModalities = z.infer<typeof OutputModalities>;

export const MaxOutputTokens = z.union([z.int().min(1).max(4096), z.literal('inf')]);

export const ServerVad = z.strictObject({
  type: z.literal('server_vad'),
  threshold: z.number().min(0).max(1).optional(),
  prefix_padding_ms: z.int().min(0).max(5000).optional(),
  silence_duration_ms: z.int().min(100).max(5000).optional(),
  create_response: z.boolean().optional(),
  interrupt_response: z.boolean().optional(),
});
export const SemanticVad = z.strictObject({
  type: z.literal('semantic_vad'),
  eagerness: z.enum(['low', 'medium', 'high', 'auto']).optional(),
  create_response: z.boolean().optional(),
  interrupt_response: z.boolean().optional(),
});
/** `null`: manual turns (the client commits and asks for responses). */
export const TurnDetectionDef = z.discriminatedUnion('type', [ServerVad, SemanticVad]).nullable();
export type TurnDetectionDef = z.infer<typeof TurnDetectionDef>;

export const InputTranscriptionDef = z
  .strictObject({
    model: z.string().min(1).max(64).optional(),
    language: z.string().min(1).max(16).optional(),
    prompt: z.string().optional(),
  })
  .nullable();
export const NoiseReductionDef = z.strictObject({ type: z.enum(['near_field', 'far_field']) }).nullable();

// ---- Client events ----

export const SessionUpdateEvent = z.strictObject({
  type: z.literal('session.update'),
  event_id: EventId.optional(),
  session: z.strictObject({
    voice: z.string().min(1).max(64).optional(),
    turn_detection: TurnDetectionDef.optional(),
    audio: z
      .strictObject({
        input: z
          .strictObject({
            format: AudioFormatInput.optional(),
            transcription: InputTranscriptionDef.optional(),
            noise_reduction: NoiseReductionDef.optional(),
          })
          .optional(),
        output: z.strictObject({ format: AudioFormatInput.optional() }).optional(),
      })
      .optional(),
    instructions: z.string().optional(),
    tools: z.array(FunctionToolDef).optional(),
    tool_choice: ToolChoiceDef.optional(),
    output_modalities: OutputModalities.optional(),
    max_output_tokens: MaxOutputTokens.optional(),
  }),
});
export type SessionUpdateEvent = z.infer<typeof SessionUpdateEvent>;

export const InputAudioBufferAppendEvent = z.strictObject({
  type: z.literal('input_audio_buffer.append'),
  event_id: EventId.optional(),
  audio: z.string(),
});
export type InputAudioBufferAppendEvent = z.infer<typeof InputAudioBufferAppendEvent>;

const bare = <T extends string>(type: T) => z.strictObject({ type: z.literal(type), event_id: EventId.optional() });

export const InputAudioBufferCommitEvent = bare('input_audio_buffer.commit');
export type InputAudioBufferCommitEvent = z.infer<typeof InputAudioBufferCommitEvent>;
export const InputAudioBufferClearEvent = bare('input_audio_buffer.clear');
export type InputAudioBufferClearEvent = z.infer<typeof InputAudioBufferClearEvent>;
export const OutputAudioBufferClearEvent = bare('output_audio_buffer.clear');
export type OutputAudioBufferClearEvent = z.infer<typeof OutputAudioBufferClearEvent>;
export const ResponseCancelEvent = bare('response.cancel');
export type ResponseCancelEvent = z.infer<typeof ResponseCancelEvent>;

export const ResponseCreateEvent = z.strictObject({
  type: z.literal('response.create'),
  event_id: EventId.optional(),
  response: z
    .strictObject({
      instructions: z.string().optional(),
      tools: z.array(FunctionToolDef).optional(),
      tool_choice: ToolChoiceDef.optional(),
      output_modalities: OutputModalities.optional(),
      max_output_tokens: MaxOutputTokens.optional(),
      /** `none`: an out-of-band response whose items do not join the conversation. */
      conversation: z.enum(['auto', 'none']).optional(),
    })
    .optional(),
});
export type ResponseCreateEvent = z.infer<typeof ResponseCreateEvent>;

/** Gateway item ids (`item_…`) and the provider's call ids are opaque strings to a client. */
const ItemId = z.string().min(1).max(64);

const InputTextPart = z.strictObject({ type: z.literal('input_text'), text: z.string() });
/** Base64 of raw PCM16LE 24 kHz mono, checked like an append. */
const InputAudioPart = z.strictObject({ type: z.literal('input_audio'), audio: z.string() });
const OutputTextPart = z.strictObject({ type: z.literal('output_text'), text: z.string() });

export const NewConversationItem = z.discriminatedUnion('type', [
  z.discriminatedUnion('role', [
    z.strictObject({
      type: z.literal('message'),
      role: z.literal('user'),
      content: z.array(z.discriminatedUnion('type', [InputTextPart, InputAudioPart])).min(1),
    }),
    z.strictObject({ type: z.literal('message'), role: z.literal('system'), content: z.array(InputTextPart).min(1) }),
    z.strictObject({ type: z.literal('message'), role: z.literal('assistant'), content: z.array(OutputTextPart).min(1) }),
  ]),
  z.strictObject({ type: z.literal('function_call_output'), call_id: z.string().min(1).max(64), output: z.string() }),
]);
export type NewConversationItem = z.infer<typeof NewConversationItem>;

export const ConversationItemCreateEvent = z.strictObject({
  type: z.literal('conversation.item.create'),
  event_id: EventId.optional(),
  /** Absent: at the end of the conversation; `root`: at its start. */
  previous_item_id: ItemId.optional(),
  item: NewConversationItem,
});
export type ConversationItemCreateEvent = z.infer<typeof ConversationItemCreateEvent>;

export const ConversationItemDeleteEvent = z.strictObject({
  type: z.literal('conversation.item.delete'),
  event_id: EventId.optional(),
  item_id: ItemId,
});
export type ConversationItemDeleteEvent = z.infer<typeof ConversationItemDeleteEvent>;

export const ConversationItemRetrieveEvent = z.strictObject({
  type: z.literal('conversation.item.retrieve'),
  event_id: EventId.optional(),
  item_id: ItemId,
});
export type ConversationItemRetrieveEvent = z.infer<typeof ConversationItemRetrieveEvent>;

export const ConversationItemTruncateEvent = z.strictObject({
  type: z.literal('conversation.item.truncate'),
  event_id: EventId.optional(),
  item_id: ItemId,
  content_index: NonNegInt,
  audio_end_ms: NonNegInt,
});
export type ConversationItemTruncateEvent = z.infer<typeof ConversationItemTruncateEvent>;

export const ClientEvent = z.discriminatedUnion('type', [
  SessionUpdateEvent,
  InputAudioBufferAppendEvent,
  InputAudioBufferCommitEvent,
  InputAudioBufferClearEvent,
  OutputAudioBufferClearEvent,
  ResponseCreateEvent,
  ResponseCancelEvent,
  ConversationItemCreateEvent,
  ConversationItemDeleteEvent,
  ConversationItemRetrieveEvent,
  ConversationItemTruncateEvent,
]);
export type ClientEvent = z.infer<typeof ClientEvent>;
export const CLIENT_EVENT_TYPES = ClientEvent.options.map((o) => o.shape.type.value);

// ---- Server events ----

export const SessionCreatedEvent = z.strictObject({
  type: z.literal('session.created'),
  event_id: EventId,
  session: VoiceSession,
});
export type SessionCreatedEvent = z.infer<typeof SessionCreatedEvent>;

export const ConversationCreatedEvent = z.strictObject({
  type: z.literal('conversation.created'),
  event_id: EventId,
  conversation: z.strictObject({ id: z.string(), object: z.literal('realtime.conversation') }),
});
export type ConversationCreatedEvent = z.infer<typeof ConversationCreatedEvent>;

export const SpeechStartedEvent = z.strictObject({
  type: z.literal('input_audio_buffer.speech_started'),
  event_id: EventId,
  audio_start_ms: NonNegInt,
});
export type SpeechStartedEvent = z.infer<typeof SpeechStartedEvent>;

export const SpeechStoppedEvent = z.strictObject({
  type: z.literal('input_audio_buffer.speech_stopped'),
  event_id: EventId,
  audio_end_ms: NonNegInt,
});
export type SpeechStoppedEvent = z.infer<typeof SpeechStoppedEvent>;

export const ResponseCreatedEvent = z.strictObject({
  type: z.literal('response.created'),
  event_id: EventId,
  response: z.strictObject({ id: z.string(), status: z.literal('in_progress') }),
});
export type ResponseCreatedEvent = z.infer<typeof ResponseCreatedEvent>;

/** Where an output event sits: its response, output item, place in the response and content part. */
const OutputPlace = {
  event_id: EventId,
  response_id: z.string(),
  item_id: z.string(),
  output_index: NonNegInt,
  content_index: NonNegInt,
};

export const OutputAudioDeltaEvent = z.strictObject({
  type: z.literal('response.output_audio.delta'),
  ...OutputPlace,
  audio: z.string(),
});
export type OutputAudioDeltaEvent = z.infer<typeof OutputAudioDeltaEvent>;

export const OutputAudioDoneEvent = z.strictObject({
  type: z.literal('response.output_audio.done'),
  ...OutputPlace,
});
export type OutputAudioDoneEvent = z.infer<typeof OutputAudioDoneEvent>;

/** A content part of an item as the gateway keeps it: transcripts, never audio bytes. */
export const ItemContentPart = z.discriminatedUnion('type', [
  z.strictObject({ type: z.literal('input_text'), text: z.string() }),
  z.strictObject({ type: z.literal('input_audio'), transcript: z.string().nullable() }),
  z.strictObject({ type: z.literal('output_text'), text: z.string() }),
  z.strictObject({ type: z.literal('output_audio'), transcript: z.string().nullable() }),
]);
export type ItemContentPart = z.infer<typeof ItemContentPart>;

const ItemStatus = z.enum(['in_progress', 'completed', 'incomplete']);
const itemHead = { id: z.string(), object: z.literal('realtime.item'), status: ItemStatus };

/** A conversation item with its gateway id. */
export const ConversationItem = z.discriminatedUnion('type', [
  z.strictObject({
    ...itemHead,
    type: z.literal('message'),
    role: z.enum(['user', 'system', 'assistant']),
    content: z.array(ItemContentPart),
  }),
  z.strictObject({ ...itemHead, type: z.literal('function_call'), call_id: z.string(), name: z.string(), arguments: z.string() }),
  z.strictObject({ ...itemHead, type: z.literal('function_call_output'), call_id: z.string(), output: z.string() }),
]);
export type ConversationItem = z.infer<typeof ConversationItem>;

/** The effective session settings, in `session.update`'s positions (sent in `session.updated`). */
export const SessionSettingsView = z.strictObject({
  voice: z.string().nullable(),
  turn_detection: TurnDetectionDef,
  audio: z.strictObject({
    input: z.strictObject({ format: AudioFormat, transcription: InputTranscriptionDef, noise_reduction: NoiseReductionDef }),
    output: z.strictObject({ format: AudioFormat }),
  }),
  instructions: z.string(),
  tools: z.array(FunctionToolDef),
  tool_choice: ToolChoiceDef,
  output_modalities: OutputModalities,
  max_output_tokens: MaxOutputTokens,
});
export type SessionSettingsView = z.infer<typeof SessionSettingsView>;

export const SessionUpdatedEvent = z.strictObject({ type: z.literal('session.updated'), event_id: EventId, session: SessionSettingsView });
export type SessionUpdatedEvent = z.infer<typeof SessionUpdatedEvent>;

export const InputAudioBufferCommittedEvent = z.strictObject({
  type: z.literal('input_audio_buffer.committed'),
  event_id: EventId,
  item_id: z.string(),
  previous_item_id: z.string().nullable(),
});
export type InputAudioBufferCommittedEvent = z.infer<typeof InputAudioBufferCommittedEvent>;

export const InputAudioBufferClearedEvent = z.strictObject({ type: z.literal('input_audio_buffer.cleared'), event_id: EventId });
export type InputAudioBufferClearedEvent = z.infer<typeof InputAudioBufferClearedEvent>;

export const ConversationItemAddedEvent = z.strictObject({
  type: z.literal('conversation.item.added'),
  event_id: EventId,
  previous_item_id: z.string().nullable(),
  item: ConversationItem,
});
export const ConversationItemDoneEvent = z.strictObject({
  type: z.literal('conversation.item.done'),
  event_id: EventId,
  previous_item_id: z.string().nullable(),
  item: ConversationItem,
});
export const ConversationItemRetrievedEvent = z.strictObject({
  type: z.literal('conversation.item.retrieved'),
  event_id: EventId,
  item: ConversationItem,
});
export const ConversationItemDeletedEvent = z.strictObject({
  type: z.literal('conversation.item.deleted'),
  event_id: EventId,
  item_id: z.string(),
});
export const ConversationItemTruncatedEvent = z.strictObject({
  type: z.literal('conversation.item.truncated'),
  event_id: EventId,
  item_id: z.string(),
  content_index: NonNegInt,
  audio_end_ms: NonNegInt,
});

const transcriptPlace = { event_id: EventId, item_id: z.string(), content_index: NonNegInt };
export const InputTranscriptionDeltaEvent = z.strictObject({
  type: z.literal('conversation.item.input_audio_transcription.delta'),
  ...transcriptPlace,
  delta: z.string(),
});
export const InputTranscriptionCompletedEvent = z.strictObject({
  type: z.literal('conversation.item.input_audio_transcription.completed'),
  ...transcriptPlace,
  transcript: z.string(),
});
export const InputTranscriptionFailedEvent = z.strictObject({
  type: z.literal('conversation.item.input_audio_transcription.failed'),
  ...transcriptPlace,
  error: z.strictObject({ type: z.string(), code: z.string(), message: z.string() }),
});

const outputItemPlace = { event_id: EventId, response_id: z.string(), output_index: NonNegInt };
export const OutputItemAddedEvent = z.strictObject({
  type: z.literal('response.output_item.added'),
  ...outputItemPlace,
  item: ConversationItem,
});
export const OutputItemDoneEvent = z.strictObject({
  type: z.literal('response.output_item.done'),
  ...outputItemPlace,
  item: ConversationItem,
});

/** A response's content part, as OpenAI GA names it (`text` or `audio`). */
export const ResponseContentPart = z.discriminatedUnion('type', [
  z.strictObject({ type: z.literal('text'), text: z.string() }),
  z.strictObject({ type: z.literal('audio'), transcript: z.string() }),
]);
export const ContentPartAddedEvent = z.strictObject({
  type: z.literal('response.content_part.added'),
  ...OutputPlace,
  part: ResponseContentPart,
});
export const ContentPartDoneEvent = z.strictObject({
  type: z.literal('response.content_part.done'),
  ...OutputPlace,
  part: ResponseContentPart,
});
export const OutputTextDeltaEvent = z.strictObject({ type: z.literal('response.output_text.delta'), ...OutputPlace, delta: z.string() });
export const OutputTextDoneEvent = z.strictObject({ type: z.literal('response.output_text.done'), ...OutputPlace, text: z.string() });
export const OutputAudioTranscriptDeltaEvent = z.strictObject({
  type: z.literal('response.output_audio_transcript.delta'),
  ...OutputPlace,
  delta: z.string(),
});
export const OutputAudioTranscriptDoneEvent = z.strictObject({
  type: z.literal('response.output_audio_transcript.done'),
  ...OutputPlace,
  transcript: z.string(),
});
const callPlace = { event_id: EventId, response_id: z.string(), item_id: z.string(), output_index: NonNegInt, call_id: z.string() };
export const FunctionCallArgumentsDeltaEvent = z.strictObject({
  type: z.literal('response.function_call_arguments.delta'),
  ...callPlace,
  delta: z.string(),
});
export const FunctionCallArgumentsDoneEvent = z.strictObject({
  type: z.literal('response.function_call_arguments.done'),
  ...callPlace,
  name: z.string(),
  arguments: z.string(),
});

/** Per-response usage, server-measured (decisions.md, Realtime). */
/** Every usage counter of one response (decisions.md, "Usage and price by modality"). */
export const ResponseUsage = z.strictObject({
  audio_in_ms: NonNegInt,
  audio_out_ms: NonNegInt,
  input_audio_tokens: NonNegInt,
  input_text_tokens: NonNegInt,
  cached_input_tokens: NonNegInt,
  output_audio_tokens: NonNegInt,
  output_text_tokens: NonNegInt,
  transcribed_ms: NonNegInt,
});
export type ResponseUsage = z.infer<typeof ResponseUsage>;

export const ResponseDoneEvent = z.strictObject({
  type: z.literal('response.done'),
  event_id: EventId,
  response: z.strictObject({
    id: z.string(),
    status: z.enum(['completed', 'cancelled', 'failed', 'incomplete']),
    usage: ResponseUsage,
  }),
});
export type ResponseDoneEvent = z.infer<typeof ResponseDoneEvent>;

export const ErrorEvent = z.strictObject({
  type: z.literal('error'),
  event_id: EventId,
  error: z.strictObject({
    type: z.string(),
    code: RealtimeErrorCode,
    message: z.string(),
    /** The offending field of the client event, as a path (`session.tools[2].parameters`). */
    param: z.string().optional(),
    event_id: z.string().optional(),
  }),
});
export type ErrorEvent = z.infer<typeof ErrorEvent>;

export const ServerEvent = z.discriminatedUnion('type', [
  SessionCreatedEvent,
  ConversationCreatedEvent,
  SpeechStartedEvent,
  SpeechStoppedEvent,
  ResponseCreatedEvent,
  OutputAudioDeltaEvent,
  OutputAudioDoneEvent,
  ResponseDoneEvent,
  ErrorEvent,
  SessionUpdatedEvent,
  InputAudioBufferCommittedEvent,
  InputAudioBufferClearedEvent,
  ConversationItemAddedEvent,
  ConversationItemDoneEvent,
  ConversationItemRetrievedEvent,
  ConversationItemDeletedEvent,
  ConversationItemTruncatedEvent,
  InputTranscriptionDeltaEvent,
  InputTranscriptionCompletedEvent,
  InputTranscriptionFailedEvent,
  OutputItemAddedEvent,
  OutputItemDoneEvent,
  ContentPartAddedEvent,
  ContentPartDoneEvent,
  OutputTextDeltaEvent,
  OutputTextDoneEvent,
  OutputAudioTranscriptDeltaEvent,
  OutputAudioTranscriptDoneEvent,
  FunctionCallArgumentsDeltaEvent,
  FunctionCallArgumentsDoneEvent,
]);
export type ServerEvent = z.infer<typeof ServerEvent>;
