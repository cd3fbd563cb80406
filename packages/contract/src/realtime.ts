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

// ---- Client events ----

export const SessionUpdateEvent = z.strictObject({
  type: z.literal('session.update'),
  event_id: EventId.optional(),
  session: z.strictObject({
    voice: z.string().min(1).max(64).optional(),
    turn_detection: z
      .strictObject({
        type: z.literal('server_vad'),
        silence_duration_ms: z.int().min(100).max(5000).optional(),
      })
      .optional(),
    audio: z
      .strictObject({
        input: z.strictObject({ format: AudioFormatInput.optional() }).optional(),
        output: z.strictObject({ format: AudioFormatInput.optional() }).optional(),
      })
      .optional(),
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
export const ResponseCreateEvent = bare('response.create');
export type ResponseCreateEvent = z.infer<typeof ResponseCreateEvent>;
export const ResponseCancelEvent = bare('response.cancel');
export type ResponseCancelEvent = z.infer<typeof ResponseCancelEvent>;

export const ClientEvent = z.discriminatedUnion('type', [
  SessionUpdateEvent,
  InputAudioBufferAppendEvent,
  InputAudioBufferCommitEvent,
  InputAudioBufferClearEvent,
  ResponseCreateEvent,
  ResponseCancelEvent,
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

export const OutputAudioDeltaEvent = z.strictObject({
  type: z.literal('response.output_audio.delta'),
  event_id: EventId,
  response_id: z.string(),
  audio: z.string(),
});
export type OutputAudioDeltaEvent = z.infer<typeof OutputAudioDeltaEvent>;

export const OutputAudioDoneEvent = z.strictObject({
  type: z.literal('response.output_audio.done'),
  event_id: EventId,
  response_id: z.string(),
});
export type OutputAudioDoneEvent = z.infer<typeof OutputAudioDoneEvent>;

/** Per-response usage, server-measured (decisions.md, Realtime). */
export const ResponseUsage = z.strictObject({
  audio_in_ms: NonNegInt,
  audio_out_ms: NonNegInt,
  input_audio_tokens: NonNegInt,
  output_audio_tokens: NonNegInt,
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
]);
export type ServerEvent = z.infer<typeof ServerEvent>;
