import type {
  ConversationItem,
  ConversationItemCreateEvent,
  ConversationItemDeleteEvent,
  ConversationItemRetrieveEvent,
  ConversationItemTruncateEvent,
  InputAudioBufferClearEvent,
  InputAudioBufferCommitEvent,
  OutputAudioBufferClearEvent,
  RealtimeServerEvent,
  ResponseCancelEvent,
  ResponseCreateEvent,
  SessionUpdateEvent,
} from 'openai/resources/realtime/realtime';
import { z } from 'zod';

/**
 * The OpenAI Realtime API (GA) as the simulator speaks it: client events parsed with zod schemas whose
 * output is checked (below) to be the vendor's own client event types, and server events typed against
 * the vendor's server event types. Anything else answers an `error` event.
 */

export { BYTES_PER_MS, SAMPLE_RATE_HZ } from '@s2s/core';

/** Energy VAD: 10 ms windows; a window whose RMS (on the int16 scale) reaches the threshold is speech. */
export const VAD_WINDOW_MS = 10;
export const VAD_RMS_THRESHOLD = 500;
/** Silence after speech that ends a turn, unless session.update sets `silence_duration_ms`. */
export const DEFAULT_SILENCE_DURATION_MS = 500;
/** `semantic_vad` is simulated as energy VAD with a silence that depends on its eagerness. */
export const SEMANTIC_VAD_SILENCE_MS = Object.freeze({ low: 1000, medium: 500, auto: 500, high: 250 });
/** A reply is played back in deltas of this much audio. */
export const REPLY_CHUNK_MS = 100;
/** Default pause between two reply deltas: faster than real time, yet a barge-in can land mid-reply. */
export const DEFAULT_REPLY_CHUNK_INTERVAL_MS = 10;
/** A text reply in audio mode is spoken as a tone of this frequency, this long per character. */
export const TONE_HZ = 440;
export const TONE_MS_PER_CHAR = 60;
/** Output text and function call arguments are streamed in deltas of at most this many characters. */
export const TEXT_DELTA_CHARS = 16;

/**
 * Usage the simulator reports in `response.done`: 1 input audio token per 100 ms of audio in the context
 * and 1 output audio token per 50 ms of audio sent, each rounded up (the reference ratio of the gateway);
 * text is 1 token per 4 characters, rounded up.
 */
export const LOCAL_TOKEN_RATIO = Object.freeze({ inputMsPerToken: 100, outputMsPerToken: 50 });
export const TEXT_CHARS_PER_TOKEN = 4;

/** Model name that echoes every appended frame at once as one output delta, without VAD (latency benchmark). */
export const ECHO_STREAM_MODEL = 'echo-stream';

export const DEFAULT_VOICE = 'alloy';

const EventId = z.string().max(256).optional();

const AudioFormat = z.object({ type: z.enum(['audio/pcm', 'audio/pcmu', 'audio/pcma']), rate: z.literal(24000).optional() });

const ServerVad = z.object({
  type: z.literal('server_vad'),
  silence_duration_ms: z.int().min(0).max(10_000).optional(),
  threshold: z.number().min(0).max(1).optional(),
  prefix_padding_ms: z.int().min(0).max(10_000).optional(),
  create_response: z.boolean().optional(),
  interrupt_response: z.boolean().optional(),
  idle_timeout_ms: z.int().nullable().optional(),
});
const SemanticVad = z.object({
  type: z.literal('semantic_vad'),
  eagerness: z.enum(['low', 'medium', 'high', 'auto']).optional(),
  create_response: z.boolean().optional(),
  interrupt_response: z.boolean().optional(),
});
export const TurnDetection = z.discriminatedUnion('type', [ServerVad, SemanticVad]).nullable();
export type TurnDetection = z.infer<typeof TurnDetection>;

const Transcription = z.object({ model: z.string().optional(), language: z.string().optional(), prompt: z.string().optional() });
const NoiseReduction = z.object({ type: z.enum(['near_field', 'far_field']) }).nullable();

export const FunctionTool = z.object({
  type: z.literal('function'),
  name: z.string().min(1),
  description: z.string().optional(),
  parameters: z.unknown().optional(),
});
export type FunctionTool = z.infer<typeof FunctionTool>;

export const ToolChoice = z.union([
  z.enum(['auto', 'none', 'required']),
  z.object({ type: z.literal('function'), name: z.string().min(1) }),
]);
export type ToolChoice = z.infer<typeof ToolChoice>;

const OutputModalities = z.union([z.tuple([z.literal('audio')]), z.tuple([z.literal('text')])]);
export type OutputModalities = z.infer<typeof OutputModalities>;
const MaxOutputTokens = z.union([z.int().min(1).max(4096), z.literal('inf')]);
/** The current session fields of OpenAI's types (decisions.md, "Current OpenAI session fields"). */
export const REASONING_EFFORTS = ['minimal', 'low', 'medium', 'high', 'xhigh'] as const;
const Reasoning = z.object({ effort: z.enum(REASONING_EFFORTS).optional() });
const Truncation = z.union([
  z.enum(['auto', 'disabled']),
  z.object({
    type: z.literal('retention_ratio'),
    retention_ratio: z.number().min(0).max(1),
    token_limits: z.object({ post_instructions: z.int().min(0).optional() }).optional(),
  }),
]);
const PromptReference = z.object({
  id: z.string().min(1),
  version: z.string().nullable().optional(),
  variables: z.record(z.string(), z.string()).nullable().optional(),
});

export const SessionUpdate = z.object({
  type: z.literal('session.update'),
  event_id: EventId,
  session: z.object({
    type: z.literal('realtime'),
    model: z.string().optional(),
    instructions: z.string().optional(),
    tools: z.array(FunctionTool).optional(),
    tool_choice: ToolChoice.optional(),
    output_modalities: OutputModalities.optional(),
    max_output_tokens: MaxOutputTokens.optional(),
    reasoning: Reasoning.optional(),
    truncation: Truncation.optional(),
    parallel_tool_calls: z.boolean().optional(),
    prompt: PromptReference.nullable().optional(),
    include: z.array(z.literal('item.input_audio_transcription.logprobs')).optional(),
    audio: z
      .object({
        input: z
          .object({
            format: AudioFormat.optional(),
            turn_detection: TurnDetection.optional(),
            transcription: Transcription.nullable().optional(),
            noise_reduction: NoiseReduction.optional(),
          })
          .optional(),
        output: z.object({ format: AudioFormat.optional(), voice: z.string().min(1).optional() }).optional(),
      })
      .optional(),
  }),
});
export type SessionUpdate = z.infer<typeof SessionUpdate>;

export const InputAudioBufferAppend = z.object({
  type: z.literal('input_audio_buffer.append'),
  event_id: EventId,
  audio: z.string(),
});

const bare = <T extends string>(type: T) => z.object({ type: z.literal(type), event_id: EventId });

const ItemId = z.string().min(1).max(256);
const InputText = z.object({ type: z.literal('input_text'), text: z.string() });
const InputAudio = z.object({ type: z.literal('input_audio'), audio: z.string(), transcript: z.string().optional() });
const OutputText = z.object({ type: z.literal('output_text'), text: z.string() });
const ItemStatus = z.enum(['completed', 'incomplete', 'in_progress']).optional();

/** Items a client may create: the GA item shapes (content parts the simulator does not simulate are refused). */
export const NewItem = z.discriminatedUnion('type', [
  z.discriminatedUnion('role', [
    z.object({
      type: z.literal('message'),
      id: ItemId.optional(),
      status: ItemStatus,
      role: z.literal('user'),
      content: z.array(z.union([InputText, InputAudio])).min(1),
    }),
    z.object({
      type: z.literal('message'),
      id: ItemId.optional(),
      status: ItemStatus,
      role: z.literal('system'),
      content: z.array(InputText).min(1),
    }),
    z.object({
      type: z.literal('message'),
      id: ItemId.optional(),
      status: ItemStatus,
      role: z.literal('assistant'),
      content: z.array(OutputText).min(1),
    }),
  ]),
  z.object({
    type: z.literal('function_call'),
    id: ItemId.optional(),
    status: ItemStatus,
    call_id: z.string().min(1),
    name: z.string().min(1),
    arguments: z.string(),
  }),
  z.object({
    type: z.literal('function_call_output'),
    id: ItemId.optional(),
    status: ItemStatus,
    call_id: z.string().min(1),
    output: z.string(),
  }),
]);
export type NewItem = z.infer<typeof NewItem>;

export const ConversationItemCreate = z.object({
  type: z.literal('conversation.item.create'),
  event_id: EventId,
  previous_item_id: z.string().optional(),
  item: NewItem,
});

export const ConversationItemTruncate = z.object({
  type: z.literal('conversation.item.truncate'),
  event_id: EventId,
  item_id: z.string(),
  content_index: z.int().nonnegative(),
  audio_end_ms: z.int().nonnegative(),
});

export const ResponseParams = z.object({
  conversation: z.string().optional(),
  instructions: z.string().optional(),
  tools: z.array(FunctionTool).optional(),
  tool_choice: ToolChoice.optional(),
  output_modalities: OutputModalities.optional(),
  max_output_tokens: MaxOutputTokens.optional(),
});
export type ResponseParams = z.infer<typeof ResponseParams>;

export const ClientEvent = z.discriminatedUnion('type', [
  SessionUpdate,
  InputAudioBufferAppend,
  bare('input_audio_buffer.commit'),
  bare('input_audio_buffer.clear'),
  bare('output_audio_buffer.clear'),
  z.object({ type: z.literal('response.create'), event_id: EventId, response: ResponseParams.optional() }),
  z.object({ type: z.literal('response.cancel'), event_id: EventId, response_id: z.string().optional() }),
  ConversationItemCreate,
  ConversationItemTruncate,
  z.object({ type: z.literal('conversation.item.delete'), event_id: EventId, item_id: z.string() }),
  z.object({ type: z.literal('conversation.item.retrieve'), event_id: EventId, item_id: z.string() }),
]);
export type ClientEvent = z.infer<typeof ClientEvent>;

/**
 * Every event the schemas above accept is a valid client event of the official `openai` package: a
 * compile-time check, so the simulator cannot drift from the vendor's published types.
 */
type Conforms<Parsed, Vendor> = [Parsed] extends [Vendor] ? true : false;
type OfType<T extends ClientEvent['type']> = Extract<ClientEvent, { type: T }>;
/**
 * The API turns input transcription and noise reduction off with `null` (as its reference says), which the
 * SDK's types leave out: those two nulls are the only difference allowed from its `session.update`.
 */
type SessionUpdateParsed = OfType<'session.update'>;
type AudioInputParsed = NonNullable<NonNullable<SessionUpdateParsed['session']['audio']>['input']>;
type SessionUpdateChecked = Omit<SessionUpdateParsed, 'session'> & {
  session: Omit<SessionUpdateParsed['session'], 'audio'> & {
    audio?: Omit<NonNullable<SessionUpdateParsed['session']['audio']>, 'input'> & {
      input?: Omit<AudioInputParsed, 'transcription' | 'noise_reduction'> & {
        transcription?: NonNullable<AudioInputParsed['transcription']>;
        noise_reduction?: NonNullable<AudioInputParsed['noise_reduction']>;
      };
    };
  };
};
export const CLIENT_EVENTS_CONFORM = {
  'session.update': true,
  'input_audio_buffer.commit': true,
  'input_audio_buffer.clear': true,
  'output_audio_buffer.clear': true,
  'response.create': true,
  'response.cancel': true,
  'conversation.item.create': true,
  'conversation.item.truncate': true,
  'conversation.item.delete': true,
  'conversation.item.retrieve': true,
} as const satisfies {
  'session.update': Conforms<SessionUpdateChecked, SessionUpdateEvent>;
  'input_audio_buffer.commit': Conforms<OfType<'input_audio_buffer.commit'>, InputAudioBufferCommitEvent>;
  'input_audio_buffer.clear': Conforms<OfType<'input_audio_buffer.clear'>, InputAudioBufferClearEvent>;
  'output_audio_buffer.clear': Conforms<OfType<'output_audio_buffer.clear'>, OutputAudioBufferClearEvent>;
  'response.create': Conforms<OfType<'response.create'>, ResponseCreateEvent>;
  'response.cancel': Conforms<OfType<'response.cancel'>, ResponseCancelEvent>;
  'conversation.item.create': Conforms<OfType<'conversation.item.create'>, ConversationItemCreateEvent>;
  'conversation.item.truncate': Conforms<OfType<'conversation.item.truncate'>, ConversationItemTruncateEvent>;
  'conversation.item.delete': Conforms<OfType<'conversation.item.delete'>, ConversationItemDeleteEvent>;
  'conversation.item.retrieve': Conforms<OfType<'conversation.item.retrieve'>, ConversationItemRetrieveEvent>;
};

/** A server event of the official `openai` package, as the simulator builds it (the event id is added on send). */
type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;
export type ServerEventBody = DistributiveOmit<RealtimeServerEvent, 'event_id'>;
export type Sent<T extends RealtimeServerEvent['type']> = Omit<Extract<RealtimeServerEvent, { type: T }>, 'event_id'>;
export type ServerEvent = RealtimeServerEvent;
export type { ConversationItem };

/** Tokens of `ms` of input or output audio. */
export function localTokens(inputMs: number, outputMs: number): { input: number; output: number } {
  return {
    input: Math.ceil(inputMs / LOCAL_TOKEN_RATIO.inputMsPerToken),
    output: Math.ceil(outputMs / LOCAL_TOKEN_RATIO.outputMsPerToken),
  };
}

/** Tokens of a text: 1 per 4 characters (UTF-16 code units), rounded up. */
export function textTokens(text: string): number {
  return Math.ceil(text.length / TEXT_CHARS_PER_TOKEN);
}
