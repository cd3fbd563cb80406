import type { RealtimeErrorCode, ResponseUsage, VoiceSession } from '@s2s/contract';
import type { ContentPart, ConversationItem, EffectiveSettings, NewItem, ResponseOptions, VoiceSettings } from '../agent/types.js';
import type { Audio, AudioFormat } from '../audio.js';
import type { ResponseStatus } from '../providers/shared/types.js';

/**
 * The relay's own realtime event model. A wire dialect (svc-realtime-v1 today, an OpenAI-compatible one
 * later) is a ClientCodec that decodes its frames into these events and encodes these events into its
 * frames; the attachment, the conversation, the response tracker and the adapters never see a wire format.
 * Settings and items are the neutral voice-agent model of agent/types.ts.
 *
 * Params: an error names the offending field. A refusal made by the codec carries it in its own dialect
 * (`wireParam`); one made by the relay carries a neutral path (`param`: `session.tools[2].parameters`,
 * `item.callId`, `itemId` …), which the codec writes in its dialect.
 */

export type InternalClientEvent =
  /** PCM16LE 24 kHz mono, already checked (strict base64, aligned, no WAV header, not empty): decodePcmFrame. */
  | { type: 'audio.append'; audio: Audio; eventId: string | undefined }
  | { type: 'session.update'; update: VoiceSettings; eventId: string | undefined }
  | { type: 'input.commit'; eventId: string | undefined }
  | { type: 'input.clear'; eventId: string | undefined }
  | { type: 'output.clear'; eventId: string | undefined }
  | { type: 'response.create'; options: ResponseOptions | undefined; eventId: string | undefined }
  | { type: 'response.cancel'; eventId: string | undefined }
  /** `previousItemId`: undefined = at the end, `root` = at the start. */
  | { type: 'item.create'; item: NewItem; previousItemId: string | undefined; eventId: string | undefined }
  | { type: 'item.delete'; itemId: string; eventId: string | undefined }
  | { type: 'item.retrieve'; itemId: string; eventId: string | undefined }
  | { type: 'item.truncate'; itemId: string; contentIndex: number; audioEndMs: number; eventId: string | undefined };

/** A client frame the codec refuses: answered with an error event, the socket stays open. */
export interface Refusal {
  type: 'refusal';
  code: Extract<RealtimeErrorCode, 'invalid_event' | 'invalid_audio_format' | 'invalid_value' | 'limit_exceeded' | 'unsupported_parameter'>;
  message: string;
  /** The client's event_id when the frame carried a valid one. */
  eventId: string | undefined;
  /** The offending field, in the codec's dialect. */
  wireParam?: string;
}

/** Where an output event sits. */
export interface OutputPlace {
  responseId: string;
  itemId: string;
  outputIndex: number;
  contentIndex: number;
}

export type InternalServerEvent =
  /** `settings`: in force at attach (defaults, or a client secret's settings). */
  | { type: 'session.created'; session: VoiceSession; settings: EffectiveSettings }
  | { type: 'session.updated'; settings: EffectiveSettings }
  | { type: 'conversation.created'; conversationId: string }
  /** `itemId`: the user item this speech becomes once committed (OpenAI's dialect names it). */
  | { type: 'speech.started'; audioStartMs: number; itemId?: string }
  | { type: 'speech.stopped'; audioEndMs: number; itemId?: string }
  | { type: 'input.committed'; itemId: string; previousItemId: string | null }
  | { type: 'input.cleared' }
  | { type: 'item.added'; item: ConversationItem; previousItemId: string | null }
  | { type: 'item.done'; item: ConversationItem; previousItemId: string | null }
  | { type: 'item.retrieved'; item: ConversationItem }
  | { type: 'item.deleted'; itemId: string }
  | { type: 'item.truncated'; itemId: string; contentIndex: number; audioEndMs: number }
  | { type: 'transcript.delta'; itemId: string; contentIndex: number; delta: string }
  | { type: 'transcript.completed'; itemId: string; contentIndex: number; transcript: string }
  | { type: 'transcript.failed'; itemId: string; contentIndex: number; message: string }
  | { type: 'response.created'; responseId: string }
  | { type: 'output_item.added'; responseId: string; outputIndex: number; item: ConversationItem }
  | { type: 'output_item.done'; responseId: string; outputIndex: number; item: ConversationItem }
  | ({ type: 'content_part.added'; part: ContentPart } & OutputPlace)
  | ({ type: 'content_part.done'; part: ContentPart } & OutputPlace)
  | ({ type: 'text.delta'; delta: string } & OutputPlace)
  | ({ type: 'text.done'; text: string } & OutputPlace)
  | ({ type: 'audio_transcript.delta'; delta: string } & OutputPlace)
  | ({ type: 'audio_transcript.done'; transcript: string } & OutputPlace)
  | { type: 'call_arguments.delta'; responseId: string; itemId: string; outputIndex: number; callId: string; delta: string }
  | {
      type: 'call_arguments.done';
      responseId: string;
      itemId: string;
      outputIndex: number;
      callId: string;
      name: string;
      arguments: string;
    }
  /** `place` is the same object for a run of deltas of one item (the codec caches its JSON head by it). */
  | { type: 'response.audio.delta'; place: OutputPlace; audio: Audio }
  | ({ type: 'response.audio.done' } & OutputPlace)
  | { type: 'response.done'; responseId: string; status: ResponseStatus; usage: ResponseUsage }
  | {
      type: 'error';
      code: RealtimeErrorCode;
      message: string;
      clientEventId?: string | undefined;
      /** A neutral path, written in the dialect by the codec. */
      param?: string | undefined;
      /** Already in the dialect (a codec refusal). */
      wireParam?: string | undefined;
    };

/** What a transport reports beside client events: a DTMF digit, the far end hanging up (a phone stream). */
export type TransportSignal = { type: 'dtmf'; digit: string } | { type: 'hangup' };

/** What one server event becomes on the wire: a text frame, several, or none (a phone stream hears audio only). */
export type ClientFrames = string | Buffer | readonly (string | Buffer)[] | null;

/** One wire dialect of the client protocol: no I/O and no timers, so it is unit-tested without a socket. */
export interface ClientCodec {
  /** The WebSocket subprotocol this dialect is negotiated by (none for a phone stream). */
  readonly protocol: string | null;
  /**
   * One WebSocket message (text frames arrive as UTF-8 bytes, already validated by ws); null when the message
   * only informs the codec (a phone stream's mark).
   */
  decode(data: Buffer, isBinary: boolean): InternalClientEvent | Refusal | TransportSignal | null;
  /** Text frames; a Buffer when that is cheaper for the socket to write (the audio path). */
  encode(event: InternalServerEvent): ClientFrames;
  /**
   * A codec that acts for its client (a phone stream truncates what the caller did not hear at barge-in) is
   * given, once, where its own client events go.
   */
  bind?(sink: (e: InternalClientEvent) => void): void;
  /**
   * The audio format the client hears now (the OpenAI dialect's from the session.updated that confirmed it;
   * a phone stream's μ-law); absent: PCM16 24 kHz. The attachment hands `response.audio.delta` audio to
   * `encode` in this format, converted from the upstream connection's where they differ.
   */
  outputFormat?(): AudioFormat;
}
