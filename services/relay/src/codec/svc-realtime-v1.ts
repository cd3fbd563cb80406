import {
  ClientEvent,
  isSupportedAudioFormat,
  REALTIME_ERROR_TYPE,
  REALTIME_PROTOCOL,
  type RealtimeErrorCode,
  type ResponseUsage,
  type VoiceSession,
} from '@s2s/contract';
import { randomBase62 } from '@s2s/core';
import type { ResponseStatus } from '../providers/types.js';
import type { ClientCodec, InternalClientEvent, InternalServerEvent, Refusal } from './model.js';
import { AUDIO_FRAME_MESSAGES, decodePcmFrame } from './pcm-frame.js';

/** Client events other than append, which takes the fast path (see isAppendShape). */
export type ControlEvent = Exclude<ClientEvent, { type: 'input_audio_buffer.append' }>;

const EVENT_ID_MAX = 128;

export function validEventId(id: unknown): string | undefined {
  return typeof id === 'string' && id.length >= 1 && id.length <= EVENT_ID_MAX ? id : undefined;
}

/** The client's event_id of any parsed JSON value, when it carries a valid one. */
export function eventIdOf(msg: unknown): string | undefined {
  return typeof msg === 'object' && msg !== null ? validEventId((msg as { event_id?: unknown }).event_id) : undefined;
}

function refuse(code: Refusal['code'], message: string, eventId: string | undefined): Refusal {
  return { type: 'refusal', code, message, eventId };
}

/**
 * Equivalent of `InputAudioBufferAppendEvent.safeParse(msg).success` for a value whose `type` is already
 * known to be `input_audio_buffer.append`, without zod's allocations on the 50-frames-a-second path.
 * test/codec.test.ts checks the equivalence on generated inputs.
 */
export function isAppendShape(msg: Record<string, unknown>): msg is { type: string; event_id?: string; audio: string } {
  for (const k in msg) if (k !== 'type' && k !== 'event_id' && k !== 'audio') return false;
  const id = msg.event_id;
  if (id !== undefined && validEventId(id) === undefined) return false;
  return typeof msg.audio === 'string';
}

const KNOWN_TYPES = new Set<string>(ClientEvent.options.map((o) => o.shape.type.value));

/** Validates any client event except the append fast path: invalid_event, or invalid_audio_format for formats. */
export function parseControlEvent(msg: unknown): ControlEvent | Refusal {
  const eventId = eventIdOf(msg);
  const type = typeof msg === 'object' && msg !== null ? (msg as { type?: unknown }).type : undefined;
  if (typeof type !== 'string' || !KNOWN_TYPES.has(type)) return refuse('invalid_event', 'Unknown or missing event type.', eventId);
  const parsed = ClientEvent.safeParse(msg);
  if (!parsed.success) {
    const paths = [...new Set(parsed.error.issues.map((i) => i.path.join('.') || '(event)'))].slice(0, 5);
    return refuse('invalid_event', `Invalid ${type} event: check ${paths.join(', ')}.`, eventId);
  }
  const event = parsed.data;
  // Only reached when the caller skipped the fast path; keep one contract for both.
  if (event.type === 'input_audio_buffer.append') return refuse('invalid_event', 'Unexpected append event.', eventId);
  if (event.type === 'session.update') {
    const input = event.session.audio?.input?.format;
    const output = event.session.audio?.output?.format;
    if ((input && !isSupportedAudioFormat(input)) || (output && !isSupportedAudioFormat(output))) {
      return refuse('invalid_audio_format', 'Audio formats must be audio/pcm, pcm16le, 24000 Hz, 1 channel.', eventId);
    }
  }
  return event;
}

export function isRefusal(x: { type: string }): x is Refusal {
  return x.type === 'refusal';
}

/** The internal event of a validated control event. */
function toInternal(event: ControlEvent): InternalClientEvent {
  const eventId = event.event_id;
  switch (event.type) {
    case 'session.update': {
      const s = event.session;
      const td = s.turn_detection;
      return {
        type: 'session.update',
        eventId,
        update: {
          ...(s.voice === undefined ? {} : { voice: s.voice }),
          ...(td === undefined
            ? {}
            : {
                turnDetection: {
                  type: 'server_vad',
                  ...(td.silence_duration_ms === undefined ? {} : { silenceDurationMs: td.silence_duration_ms }),
                },
              }),
        },
      };
    }
    case 'input_audio_buffer.commit':
      return { type: 'input.commit', eventId };
    case 'input_audio_buffer.clear':
      return { type: 'input.clear', eventId };
    case 'response.create':
      return { type: 'response.create', eventId };
    case 'response.cancel':
      return { type: 'response.cancel', eventId };
  }
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
      error: { type: REALTIME_ERROR_TYPE[code], code, message, ...(clientEventId === undefined ? {} : { event_id: clientEventId }) },
    }),
};

function msInt(ms: number): number {
  return Number.isFinite(ms) && ms > 0 ? Math.round(ms) : 0;
}

/** The gateway's own dialect (api-v1 §4, decisions.md "Realtime"), negotiated as `svc-realtime-v1`. */
export class SvcRealtimeV1Codec implements ClientCodec {
  readonly protocol = REALTIME_PROTOCOL;
  /** The last response id and its JSON form: deltas of one response come in runs. */
  private lastId = '';
  private lastQuoted = '""';

  constructor(private readonly ids: EventIds = new EventIds()) {}

  decode(data: Buffer, isBinary: boolean): InternalClientEvent | Refusal {
    if (isBinary) return refuse('invalid_event', 'Events are JSON text frames.', undefined);
    let msg: unknown;
    try {
      msg = JSON.parse(data.toString());
    } catch {
      return refuse('invalid_event', 'The event is not valid JSON.', undefined);
    }
    if (typeof msg === 'object' && msg !== null && (msg as { type?: unknown }).type === 'input_audio_buffer.append') {
      const ev = msg as Record<string, unknown>;
      if (!isAppendShape(ev)) {
        return refuse(
          'invalid_event',
          'Invalid input_audio_buffer.append event: expected type, audio (string) and an optional event_id.',
          eventIdOf(ev),
        );
      }
      const pcm = decodePcmFrame(ev.audio);
      if (typeof pcm === 'string') return refuse('invalid_audio_format', AUDIO_FRAME_MESSAGES[pcm], ev.event_id);
      return { type: 'audio.append', pcm, eventId: ev.event_id };
    }
    const event = parseControlEvent(msg);
    return isRefusal(event) ? event : toInternal(event);
  }

  encode(e: InternalServerEvent): string | Buffer {
    const id = this.ids.next();
    switch (e.type) {
      case 'response.audio.delta':
        if (e.responseId !== this.lastId) {
          this.lastId = e.responseId;
          this.lastQuoted = JSON.stringify(e.responseId);
        }
        return serverEvents.audioDelta(id, this.lastQuoted, e.pcm);
      case 'session.created':
        return serverEvents.sessionCreated(id, e.session);
      case 'conversation.created':
        return serverEvents.conversationCreated(id, e.conversationId);
      case 'speech.started':
        return serverEvents.speechStarted(id, msInt(e.audioStartMs));
      case 'speech.stopped':
        return serverEvents.speechStopped(id, msInt(e.audioEndMs));
      case 'response.created':
        return serverEvents.responseCreated(id, e.responseId);
      case 'response.audio.done':
        return serverEvents.audioDone(id, e.responseId);
      case 'response.done':
        return serverEvents.responseDone(id, e.responseId, e.status, e.usage);
      case 'error':
        return serverEvents.error(id, e.code, e.message, e.clientEventId);
    }
  }
}
