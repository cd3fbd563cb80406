import type { RealtimeErrorCode, ResponseUsage, VoiceSession } from '@s2s/contract';
import type { ResponseStatus } from '../providers/types.js';

/**
 * The relay's own realtime event model. A wire dialect (svc-realtime-v1 today, an OpenAI-compatible one
 * later) is a ClientCodec that decodes its frames into these events and encodes these events into its
 * frames; the attachment, the response tracker and the adapters never see a wire format.
 */

/** Session settings a client may change mid-session, already validated by the codec. */
export interface SessionUpdate {
  voice?: string;
  turnDetection?: { type: 'server_vad'; silenceDurationMs?: number };
}

export type InternalClientEvent =
  /** Raw PCM16LE 24 kHz mono, already checked (aligned, no WAV header, not empty). */
  | { type: 'audio.append'; pcm: Buffer; eventId: string | undefined }
  | { type: 'session.update'; update: SessionUpdate; eventId: string | undefined }
  | { type: 'input.commit'; eventId: string | undefined }
  | { type: 'input.clear'; eventId: string | undefined }
  | { type: 'response.create'; eventId: string | undefined }
  | { type: 'response.cancel'; eventId: string | undefined };

/** A client frame the codec refuses: answered with an error event, the socket stays open. */
export interface Refusal {
  type: 'refusal';
  code: Extract<RealtimeErrorCode, 'invalid_event' | 'invalid_audio_format'>;
  message: string;
  /** The client's event_id when the frame carried a valid one. */
  eventId: string | undefined;
}

export type InternalServerEvent =
  | { type: 'session.created'; session: VoiceSession }
  | { type: 'conversation.created'; conversationId: string }
  | { type: 'speech.started'; audioStartMs: number }
  | { type: 'speech.stopped'; audioEndMs: number }
  | { type: 'response.created'; responseId: string }
  | { type: 'response.audio.delta'; responseId: string; pcm: Buffer }
  | { type: 'response.audio.done'; responseId: string }
  | { type: 'response.done'; responseId: string; status: ResponseStatus; usage: ResponseUsage }
  | { type: 'error'; code: RealtimeErrorCode; message: string; clientEventId?: string | undefined };

/** One wire dialect of the client protocol: no I/O and no timers, so it is unit-tested without a socket. */
export interface ClientCodec {
  /** The WebSocket subprotocol this dialect is negotiated by. */
  readonly protocol: string;
  /** One WebSocket message (text frames arrive as UTF-8 bytes, already validated by ws). */
  decode(data: Buffer, isBinary: boolean): InternalClientEvent | Refusal;
  /** One text frame; a Buffer when that is cheaper for the socket to write (the audio path). */
  encode(event: InternalServerEvent): string | Buffer;
}
