import { z } from 'zod';

/**
 * The subset of the OpenAI Realtime API (GA) the simulator speaks: the events the relay's `openai`
 * adapter sends, with the shapes the GA API documents. Anything else answers an `error` event.
 */

export { BYTES_PER_MS, SAMPLE_RATE_HZ } from '@s2s/core';

/** Energy VAD: 10 ms windows; a window whose RMS (on the int16 scale) reaches the threshold is speech. */
export const VAD_WINDOW_MS = 10;
export const VAD_RMS_THRESHOLD = 500;
/** Silence after speech that ends a turn, unless session.update sets `silence_duration_ms`. */
export const DEFAULT_SILENCE_DURATION_MS = 500;
/** A reply is played back in deltas of this much audio. */
export const REPLY_CHUNK_MS = 100;
/** Default pause between two reply deltas: faster than real time, yet a barge-in can land mid-reply. */
export const DEFAULT_REPLY_CHUNK_INTERVAL_MS = 10;

/**
 * Usage the simulator reports in `response.done`: 1 input audio token per 100 ms of committed input and
 * 1 output audio token per 50 ms of audio sent, each rounded up (the reference ratio of the gateway).
 */
export const LOCAL_TOKEN_RATIO = Object.freeze({ inputMsPerToken: 100, outputMsPerToken: 50 });

/** Model name that echoes every appended frame at once as one output delta, without VAD (latency benchmark). */
export const ECHO_STREAM_MODEL = 'echo-stream';

export const DEFAULT_VOICE = 'alloy';

const EventId = z.string().max(256).optional();

const AudioFormat = z.object({ type: z.string(), rate: z.number().optional() });

const TurnDetection = z
  .object({
    type: z.string(),
    silence_duration_ms: z.int().min(0).max(10_000).optional(),
    threshold: z.number().optional(),
    prefix_padding_ms: z.int().optional(),
    create_response: z.boolean().optional(),
    interrupt_response: z.boolean().optional(),
  })
  .nullable();

export const SessionUpdate = z.object({
  type: z.literal('session.update'),
  event_id: EventId,
  session: z.object({
    type: z.literal('realtime'),
    model: z.string().optional(),
    instructions: z.string().optional(),
    output_modalities: z.array(z.string()).optional(),
    audio: z
      .object({
        input: z.object({ format: AudioFormat.optional(), turn_detection: TurnDetection.optional() }).optional(),
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

export const ConversationItemTruncate = z.object({
  type: z.literal('conversation.item.truncate'),
  event_id: EventId,
  item_id: z.string(),
  content_index: z.int().nonnegative(),
  audio_end_ms: z.int().nonnegative(),
});

export const ClientEvent = z.discriminatedUnion('type', [
  SessionUpdate,
  InputAudioBufferAppend,
  bare('input_audio_buffer.commit'),
  bare('input_audio_buffer.clear'),
  z.object({ type: z.literal('response.create'), event_id: EventId, response: z.record(z.string(), z.unknown()).optional() }),
  z.object({ type: z.literal('response.cancel'), event_id: EventId, response_id: z.string().optional() }),
  ConversationItemTruncate,
]);
export type ClientEvent = z.infer<typeof ClientEvent>;

export type ServerEvent = { type: string; event_id: string } & Record<string, unknown>;

/** Tokens the simulator reports for `ms` of input or output audio. */
export function localTokens(inputMs: number, outputMs: number): { input: number; output: number } {
  return {
    input: Math.ceil(inputMs / LOCAL_TOKEN_RATIO.inputMsPerToken),
    output: Math.ceil(outputMs / LOCAL_TOKEN_RATIO.outputMsPerToken),
  };
}
