import { z } from 'zod';
import { RealtimeSessionSettings } from './client-secrets.js';
import { ModelId } from './http.js';
import {
  ClientEvent,
  OutputAudioDeltaEvent,
  ResponseCreatedEvent,
  ResponseDoneEvent,
  ServerEvent,
  SessionCreatedEvent,
  SessionUpdatedEvent,
  SessionUpdateEvent,
  SpeechStartedEvent,
  SpeechStoppedEvent,
  ErrorEvent,
} from './realtime.js';

/**
 * The OpenAI-compatible dialect of the legacy path (decisions.md, "The OpenAI-compatible dialect"): OpenAI's
 * GA wire format. Its events are svc-realtime-v1's, except the ones below, which take OpenAI's shapes; this
 * module describes them for the AsyncAPI document and for clients (the relay's codec writes them).
 */
const EventId = z.string().min(1).max(128);

/** `session.update` with OpenAI's GA session: `type: "realtime"`; a `model` in it changes nothing. */
export const OpenAiSessionUpdateEvent = z.strictObject({
  type: z.literal('session.update'),
  event_id: EventId.optional(),
  session: RealtimeSessionSettings.extend({ type: z.literal('realtime'), model: z.string().optional() }),
});
export type OpenAiSessionUpdateEvent = z.infer<typeof OpenAiSessionUpdateEvent>;

/** The session of `session.created` / `session.updated`: OpenAI-shaped, `model` the catalog id, the effective settings. */
export const OpenAiSessionView = RealtimeSessionSettings.extend({
  type: z.literal('realtime'),
  object: z.literal('realtime.session').optional(),
  id: z.string().optional(),
  model: ModelId,
}).loose();
export type OpenAiSessionView = z.infer<typeof OpenAiSessionView>;

/** `response.done.response.usage` in OpenAI's shape, built from the gateway's own counters. */
export const OpenAiResponseUsage = z.strictObject({
  total_tokens: z.int().nonnegative(),
  input_tokens: z.int().nonnegative(),
  output_tokens: z.int().nonnegative(),
  input_token_details: z.strictObject({
    audio_tokens: z.int().nonnegative(),
    text_tokens: z.int().nonnegative(),
    cached_tokens: z.int().nonnegative(),
    cached_tokens_details: z.strictObject({ audio_tokens: z.int().nonnegative(), text_tokens: z.int().nonnegative() }).partial(),
  }),
  output_token_details: z.strictObject({ audio_tokens: z.int().nonnegative(), text_tokens: z.int().nonnegative() }),
});
export type OpenAiResponseUsage = z.infer<typeof OpenAiResponseUsage>;

const head = { event_id: EventId };

export const OpenAiSessionCreatedEvent = z.strictObject({ type: z.literal('session.created'), ...head, session: OpenAiSessionView });
export const OpenAiSessionUpdatedEvent = z.strictObject({ type: z.literal('session.updated'), ...head, session: OpenAiSessionView });

/** Output audio in `delta` (svc-realtime-v1 names it `audio`). */
export const OpenAiOutputAudioDeltaEvent = OutputAudioDeltaEvent.omit({ audio: true }).extend({ delta: z.string() });

export const OpenAiResponseCreatedEvent = z.strictObject({
  type: z.literal('response.created'),
  ...head,
  response: z
    .object({
      id: z.string(),
      object: z.literal('realtime.response').optional(),
      status: z.literal('in_progress'),
      output: z.array(z.unknown()).optional(),
    })
    .loose(),
});

export const OpenAiResponseDoneEvent = z.strictObject({
  type: z.literal('response.done'),
  ...head,
  response: z
    .object({
      id: z.string(),
      object: z.literal('realtime.response').optional(),
      status: ResponseDoneEvent.shape.response.shape.status,
      usage: OpenAiResponseUsage,
    })
    .loose(),
});

export const OpenAiErrorEvent = z.strictObject({
  type: z.literal('error'),
  ...head,
  error: z.strictObject({
    type: z.string(),
    code: z.string().nullable(),
    message: z.string(),
    param: z.string().nullable().optional(),
    event_id: z.string().nullable().optional(),
  }),
});

/** OpenAI's speech events name the user item the speech becomes (its SDKs drop them without it). */
export const OpenAiSpeechStartedEvent = SpeechStartedEvent.extend({ item_id: z.string() });
export const OpenAiSpeechStoppedEvent = SpeechStoppedEvent.extend({ item_id: z.string() });

/** The svc-realtime-v1 events whose OpenAI shape differs (services/relay/src/codecs/openai/codec.ts writes them), by type. */
const REPLACED_CLIENT = new Set<string>([SessionUpdateEvent.shape.type.value]);
const REPLACED_SERVER = new Set<string>(
  [
    SessionCreatedEvent,
    SessionUpdatedEvent,
    OutputAudioDeltaEvent,
    ResponseCreatedEvent,
    ResponseDoneEvent,
    ErrorEvent,
    SpeechStartedEvent,
    SpeechStoppedEvent,
  ].map((e) => e.shape.type.value),
);

export const OpenAiClientEvent = z.discriminatedUnion('type', [
  OpenAiSessionUpdateEvent,
  ...ClientEvent.options.filter((o) => !REPLACED_CLIENT.has(o.shape.type.value)),
]);
export type OpenAiClientEvent = z.infer<typeof OpenAiClientEvent>;

export const OpenAiServerEvent = z.discriminatedUnion('type', [
  OpenAiSessionCreatedEvent,
  OpenAiSessionUpdatedEvent,
  OpenAiOutputAudioDeltaEvent,
  OpenAiResponseCreatedEvent,
  OpenAiResponseDoneEvent,
  OpenAiErrorEvent,
  OpenAiSpeechStartedEvent,
  OpenAiSpeechStoppedEvent,
  ...ServerEvent.options.filter((o) => !REPLACED_SERVER.has(o.shape.type.value)),
]);
export type OpenAiServerEvent = z.infer<typeof OpenAiServerEvent>;

/**
 * A WebRTC call's playback on the output track (decisions.md, "WebRTC"), as OpenAI reports it: `started`
 * when the first packet of a response's audio left, `stopped` when all of it has played, `cleared` when a
 * barge-in or the client's `output_audio_buffer.clear` cut it.
 */
const outputAudioBuffer = <T extends string>(type: T) =>
  z.strictObject({ type: z.literal(type), ...head, response_id: z.string().nullable() });
export const OutputAudioBufferStartedEvent = outputAudioBuffer('output_audio_buffer.started');
export const OutputAudioBufferStoppedEvent = outputAudioBuffer('output_audio_buffer.stopped');
export const OutputAudioBufferClearedEvent = outputAudioBuffer('output_audio_buffer.cleared');

/** What a WebRTC call's `oai-events` channel carries from the server: the OpenAI dialect and the playback events. */
export const WebRtcServerEvent = z.discriminatedUnion('type', [
  ...OpenAiServerEvent.options,
  OutputAudioBufferStartedEvent,
  OutputAudioBufferStoppedEvent,
  OutputAudioBufferClearedEvent,
]);
export type WebRtcServerEvent = z.infer<typeof WebRtcServerEvent>;

/** Where a WebRTC call's SDP offer is posted (decisions.md, "WebRTC"); `…/{id}/hangup` ends it. */
export const WEBRTC_CALLS_PATH = '/v1/realtime/calls';
/** The label of a WebRTC call's data channel, which carries the OpenAI dialect's events. */
export const WEBRTC_EVENTS_CHANNEL = 'oai-events';
