import {
  ClientEvent,
  isSupportedAudioFormat,
  REALTIME_ERROR_TYPE,
  type RealtimeErrorCode,
  type ResponseUsage,
  type VoiceSession,
} from '@s2s/contract';
import { randomBase62 } from '@s2s/core';
import type { ResponseStatus } from '../providers/types.js';

/** Client events other than append, which takes the fast path (see isAppendShape). */
export type ControlEvent = Exclude<ClientEvent, { type: 'input_audio_buffer.append' }>;

export interface Rejection {
  rejected: true;
  code: Extract<RealtimeErrorCode, 'invalid_event' | 'invalid_audio_format'>;
  message: string;
  /** The client's event_id, echoed in error.event_id when it is a valid one. */
  eventId: string | undefined;
}

const EVENT_ID_MAX = 128;

export function validEventId(id: unknown): string | undefined {
  return typeof id === 'string' && id.length >= 1 && id.length <= EVENT_ID_MAX ? id : undefined;
}

/** The client's event_id of any parsed JSON value, when it carries a valid one. */
export function eventIdOf(msg: unknown): string | undefined {
  return typeof msg === 'object' && msg !== null ? validEventId((msg as { event_id?: unknown }).event_id) : undefined;
}

/**
 * Equivalent of `InputAudioBufferAppendEvent.safeParse(msg).success` for a value whose `type` is already
 * known to be `input_audio_buffer.append`, without zod's allocations on the 50-frames-a-second path.
 * test/events.test.ts checks the equivalence on generated inputs.
 */
export function isAppendShape(msg: Record<string, unknown>): msg is { type: string; event_id?: string; audio: string } {
  for (const k in msg) if (k !== 'type' && k !== 'event_id' && k !== 'audio') return false;
  const id = msg.event_id;
  if (id !== undefined && validEventId(id) === undefined) return false;
  return typeof msg.audio === 'string';
}

const KNOWN_TYPES = new Set<string>(ClientEvent.options.map((o) => o.shape.type.value));

/** Validates any client event except the append fast path: invalid_event, or invalid_audio_format for formats. */
export function parseControlEvent(msg: unknown): ControlEvent | Rejection {
  const eventId = eventIdOf(msg);
  const type = typeof msg === 'object' && msg !== null ? (msg as { type?: unknown }).type : undefined;
  if (typeof type !== 'string' || !KNOWN_TYPES.has(type)) {
    return { rejected: true, code: 'invalid_event', message: 'Unknown or missing event type.', eventId };
  }
  const parsed = ClientEvent.safeParse(msg);
  if (!parsed.success) {
    const paths = [...new Set(parsed.error.issues.map((i) => i.path.join('.') || '(event)'))].slice(0, 5);
    return { rejected: true, code: 'invalid_event', message: `Invalid ${type} event: check ${paths.join(', ')}.`, eventId };
  }
  const event = parsed.data;
  if (event.type === 'input_audio_buffer.append') {
    // Only reached when the caller skipped the fast path; keep one contract for both.
    return { rejected: true, code: 'invalid_event', message: 'Unexpected append event.', eventId };
  }
  if (event.type === 'session.update') {
    const input = event.session.audio?.input?.format;
    const output = event.session.audio?.output?.format;
    if ((input && !isSupportedAudioFormat(input)) || (output && !isSupportedAudioFormat(output))) {
      return {
        rejected: true,
        code: 'invalid_audio_format',
        message: 'Audio formats must be audio/pcm, pcm16le, 24000 Hz, 1 channel.',
        eventId,
      };
    }
  }
  return event;
}

export function isRejection(x: ControlEvent | Rejection): x is Rejection {
  return 'rejected' in x;
}

/**
 * Server event ids: a random per-process prefix and a counter, unique without a random draw per event
 * (output deltas are the other hot path).
 */
export class EventIds {
  private readonly prefix = `evt_${randomBase62(10)}`;
  private n = 0;
  next(): string {
    return this.prefix + (this.n++).toString(36);
  }
}

// Server events. JSON.stringify for the rare ones; the output delta is concatenated (its id and base64
// need no escaping; the response id is pre-quoted once per response) and handed to ws as one Buffer:
// a string would be written by a writev that encodes it on every frame.

export const serverEvents = {
  sessionCreated: (eventId: string, session: VoiceSession) => JSON.stringify({ type: 'session.created', event_id: eventId, session }),
  conversationCreated: (eventId: string, conversationId: string) =>
    JSON.stringify({
      type: 'conversation.created',
      event_id: eventId,
      conversation: { id: conversationId, object: 'realtime.conversation' },
    }),
  speechStarted: (eventId: string, audioStartMs: number) =>
    JSON.stringify({ type: 'input_audio_buffer.speech_started', event_id: eventId, audio_start_ms: audioStartMs }),
  speechStopped: (eventId: string, audioEndMs: number) =>
    JSON.stringify({ type: 'input_audio_buffer.speech_stopped', event_id: eventId, audio_end_ms: audioEndMs }),
  responseCreated: (eventId: string, responseId: string) =>
    JSON.stringify({ type: 'response.created', event_id: eventId, response: { id: responseId, status: 'in_progress' } }),
  audioDelta: (eventId: string, quotedResponseId: string, pcm: Buffer): Buffer =>
    Buffer.from(
      '{"type":"response.output_audio.delta","event_id":"' +
        eventId +
        '","response_id":' +
        quotedResponseId +
        ',"audio":"' +
        pcm.toString('base64') +
        '"}',
      'latin1',
    ),
  audioDone: (eventId: string, responseId: string) =>
    JSON.stringify({ type: 'response.output_audio.done', event_id: eventId, response_id: responseId }),
  responseDone: (eventId: string, responseId: string, status: ResponseStatus, usage: ResponseUsage) =>
    JSON.stringify({
      type: 'response.done',
      event_id: eventId,
      response: {
        id: responseId,
        status,
        usage: {
          audio_in_ms: usage.audio_in_ms,
          audio_out_ms: usage.audio_out_ms,
          input_audio_tokens: usage.input_audio_tokens,
          output_audio_tokens: usage.output_audio_tokens,
        },
      },
    }),
  error: (eventId: string, code: RealtimeErrorCode, message: string, clientEventId?: string) =>
    JSON.stringify({
      type: 'error',
      event_id: eventId,
      error: {
        type: REALTIME_ERROR_TYPE[code],
        code,
        message,
        ...(clientEventId === undefined ? {} : { event_id: clientEventId }),
      },
    }),
};
