import type { CheckpointRoute } from '@s2s/contract';
import type { Usage } from '@s2s/core';
import type { Audio, AudioFormat } from '../../audio.js';
import type { ContentPart, ConversationItem, ItemBody, NewItem, ResponseOptions, VoiceSettings, TokenReport } from '../../agent/types.js';

/**
 * The provider adapter interface. An adapter implements only its upstream protocol; ProviderBase (shared/base.ts)
 * owns the connect timeout, connection retries and metering. Audio crossing this interface is an Audio
 * (base64 or bytes, whichever it came as; `bytes` exact) in the connection's formats: the `formats` of its
 * config, chosen by ProviderBase among the provider's `audioFormats` (PCM16LE 24 kHz mono, or G.711 where
 * the provider takes it and the client speaks it, carried as is). An adapter resamples or re-encodes only
 * what its provider's wire needs beyond that (Gemini: 16 kHz in).
 *
 * The whole voice-agent model crosses it (agent/types.ts): settings, conversation items, transcripts,
 * text, function calls and token reports by modality. Items are named by opaque keys: the gateway id for
 * an item the client created, an adapter-chosen key for one the provider made (see agent/types.ts). What a
 * provider cannot do is stated up front in `ProviderAdapter.supports`; the relay refuses such a request
 * before anything is sent upstream, so an adapter never receives a request its capabilities deny.
 */

/** Token counts of one response, audio only: the shape before issue 9 (kept for the metering of base.ts). */
export interface UpstreamTokenUsage {
  input_audio_tokens: number;
  output_audio_tokens: number;
}

export type ResponseStatus = 'completed' | 'cancelled' | 'failed' | 'incomplete';

/** What an upstream request was, when the provider refused it (`error.request`). */
export type UpstreamRequestKind =
  | 'update_session'
  | 'create_item'
  | 'delete_item'
  | 'truncate_item'
  | 'create_response'
  | 'cancel_response'
  | 'commit'
  | 'clear_output_audio';

/** Where an output event sits: the response, its output item (by key) and that item's place in the response. */
export interface OutputRef {
  responseId: string;
  itemKey: string;
  outputIndex: number;
}

/** Normalized upstream events; nothing provider-specific (names, ids shown to clients, URLs, headers) crosses this line. */
export type UpstreamEvent =
  | { type: 'speech_started'; audioStartMs: number; itemKey?: string }
  | { type: 'speech_stopped'; audioEndMs: number; itemKey?: string }
  /** The upstream accepted an updateSession (one per call, in order). */
  | { type: 'session_updated' }
  /** The input buffer became a user audio item (manual commit or server VAD). */
  | { type: 'input_committed'; itemKey: string; previousKey: string | null }
  /** An item joined the upstream conversation: one the client created (key = gateway id) or one the provider made. */
  | { type: 'item_added'; itemKey: string; previousKey: string | null; item: ItemBody }
  | { type: 'item_done'; itemKey: string; item: ItemBody }
  | { type: 'item_deleted'; itemKey: string }
  | { type: 'item_truncated'; itemKey: string; contentIndex: number; audioEndMs: number }
  | { type: 'input_transcript_delta'; itemKey: string; contentIndex: number; delta: string }
  | { type: 'input_transcript_completed'; itemKey: string; contentIndex: number; transcript: string }
  | { type: 'input_transcript_failed'; itemKey: string; contentIndex: number; message: string }
  | { type: 'response_created'; responseId: string }
  | ({ type: 'output_item_added'; item: ItemBody } & OutputRef)
  | ({ type: 'output_item_done'; item: ItemBody } & OutputRef)
  | ({ type: 'content_part_added'; contentIndex: number; part: ContentPart } & OutputRef)
  | ({ type: 'content_part_done'; contentIndex: number; part: ContentPart } & OutputRef)
  | ({ type: 'text_delta'; contentIndex: number; delta: string } & OutputRef)
  | ({ type: 'text_done'; contentIndex: number; text: string } & OutputRef)
  | ({ type: 'audio_transcript_delta'; contentIndex: number; delta: string } & OutputRef)
  | ({ type: 'audio_transcript_done'; contentIndex: number; transcript: string } & OutputRef)
  | ({ type: 'function_call_arguments_delta'; callId: string; delta: string } & OutputRef)
  | ({ type: 'function_call_arguments_done'; callId: string; name: string; arguments: string } & OutputRef)
  /**
   * Output audio. `itemKey`/`outputIndex`/`contentIndex` place it (absent: the adapter does not know, the
   * relay uses the response's current audio item). The hot path: nothing else rides on it.
   */
  | { type: 'audio_delta'; responseId: string; audio: Audio; itemKey?: string; outputIndex?: number; contentIndex?: number }
  | { type: 'audio_done'; responseId: string; itemKey?: string; outputIndex?: number; contentIndex?: number }
  | {
      type: 'response_done';
      responseId: string;
      status: ResponseStatus;
      /** The provider's report by modality (input excludes cached; cached of any modality); null when it reported none. */
      tokens: TokenReport | null;
      /** Filled by ProviderBase: this response's server-measured usage (input since the previous response). */
      metered?: Usage;
    }
  /**
   * fatal: the upstream session cannot continue (the relay fails the session if reconnecting fails too).
   * `request`: the request the provider refused, when known (an updateSession refusal fails that update);
   * `param`: the field it named, in the neutral model's terms (e.g. `voice`, `instructions`).
   */
  | { type: 'error'; message: string; fatal: boolean; request?: UpstreamRequestKind; param?: string }
  /**
   * The provider announced that it will end this connection in `timeLeftMs` (the simulator's OpenAI-like
   * warning). ProviderBase moves the session to a new connection; the relay never sees it.
   */
  | { type: 'expiring'; timeLeftMs: number }
  | { type: 'closed'; unexpected: boolean };

/** An item a new upstream connection is seeded with (text only); `key` is the id it gets upstream. */
export interface HistoryEntry {
  key: string;
  item: ItemBody;
}

/**
 * The effective settings a new upstream opens with: all of them in its opening configuration, before any
 * audio. `history`: the conversation so far, replayed (in order, at the end) before `connect` resolves.
 * `formats`, as an adapter receives it: the connection's audio formats, both always set, for all of its life
 * (the session's own audio path converts to and from them: shared/upstream-session.ts); never a client's.
 */
export type UpstreamSessionConfig = { providerModel: string; history?: HistoryEntry[] } & VoiceSettings;

/** What the relay hands ProviderBase so that a session can move to a new connection: its settings and conversation now. */
export interface ReplayContext {
  settings: VoiceSettings;
  /** Conversation order; `key` is the relay's upstream key for the item, `item.id` its gateway id. */
  items: { key: string; item: ConversationItem }[];
}

export interface UpstreamConnection {
  appendAudio(audio: Audio): void;
  commit(): void;
  clear(): void;
  createResponse(options?: ResponseOptions): void;
  /** Barge-in: stop the current response; `playedMs` is how much of its audio the client received. */
  cancelResponse(responseId: string | null, playedMs: number): void;
  /**
   * Changes only the fields present; answered by a `session_updated` event or an `error` with `request: 'update_session'`.
   * Never the formats: a connection keeps those it opened with.
   */
  updateSession(settings: VoiceSettings): void;
  /**
   * Adds a client item after `previousKey` (null: at the end); answered by `item_added`/`item_done` with `key`.
   * Its `input_audio` parts are in the connection's input format.
   */
  createItem(key: string, item: NewItem, previousKey: string | null): void;
  deleteItem(key: string): void;
  truncateItem(key: string, contentIndex: number, audioEndMs: number): void;
  /** Stops output audio already buffered for playback upstream (WebRTC-style buffers; a no-op where none exists). */
  clearOutputAudio(): void;
  close(): Promise<void>;
}

/**
 * What ProviderBase.open() returns: the adapter's connection wrapped with metering. `usage()` is cumulative
 * for this upstream connection: accepted input bytes and provider-produced output bytes (48 bytes = 1 ms),
 * tokens from the provider's reports, or from the adapter's tokenRatio when the provider reports none.
 */
export interface MeteredUpstream extends UpstreamConnection {
  /** The session's one meter (UsageMeter), for every connection it goes through: what the relay reads. */
  readonly meter: UsageReading;
  /** meter.usage(). */
  usage(): Usage;
  /** meter.routes(). */
  routes(): CheckpointRoute[];
}

/** What is read of a meter (UsageMeter, metering/usage-meter.ts). */
export interface UsageReading {
  /** Cumulative usage, a copy. */
  usage(): Usage;
  /** The same counters as a view kept up to date in place, for the per-frame budget screen: read, never kept. */
  usageNow(): Readonly<Usage>;
  /** usage() split by the route that served it (provider and provider model), the parts summing to it. */
  routes(): CheckpointRoute[];
}

/**
 * What a provider can do beyond audio in and audio out. The relay refuses a request for anything false
 * here before forwarding (an error naming the field; nothing sent upstream, nothing billed). The catalog's
 * `capabilities.input_transcription` / `output_transcription` agree with the two transcription flags.
 */
export interface ProviderCapabilities {
  /** `audio.input.transcription`: transcripts of the user's audio on request. */
  inputTranscription: boolean;
  /** Transcripts of the model's spoken output. */
  outputTranscription: boolean;
  /** `output_modalities: ["text"]`. */
  textOutput: boolean;
  /** Function tools, calls and `function_call_output` items. */
  tools: boolean;
  /** `turn_detection: { type: "semantic_vad" }`. */
  semanticVad: boolean;
  /** `turn_detection: null` (the client commits and asks for responses). */
  manualTurns: boolean;
  /** `audio.input.noise_reduction`. */
  noiseReduction: boolean;
  /** A settings change (other than the voice) after the upstream opened. */
  sessionUpdate: boolean;
  /** A voice change after the first audio output of the session (OpenAI refuses it). */
  voiceChangeAfterAudio: boolean;
  /**
   * The audio formats the provider takes on its wire, for input and output each (OpenAI's GA Realtime:
   * PCM16 24 kHz, μ-law and A-law). A connection speaks the client's format where it is among them, so that
   * audio passes through unconverted; PCM16 24 kHz otherwise, which every provider takes.
   */
  audioFormats: readonly AudioFormat[];
  /** `conversation.item.create` with a user `input_text` part (a text turn). */
  textInput: boolean;
  /** User `input_audio` parts in `conversation.item.create`. */
  audioItems: boolean;
  /** `system` and assistant `output_text` messages in `conversation.item.create`. */
  systemAndAssistantItems: boolean;
  itemDelete: boolean;
  itemTruncate: boolean;
  /** `response.create` with a `response` object (per-response overrides, `conversation: "none"`). */
  responseOptions: boolean;
  /** The current OpenAI session fields (decisions.md, "Current OpenAI session fields"). */
  sessionFields: SessionFieldSupport;
}

/** Passed on to the provider as the client set it. */
export const HONOURED = 'honoured';

/**
 * What a provider does with the current OpenAI session fields. `reasoning` and `prompt` change the answer:
 * refused, naming the param, where not honoured. The hints are accepted everywhere; where not honoured, the
 * value is what takes effect at that provider whatever the client asks (reported in session.updated).
 */
export interface SessionFieldSupport {
  reasoning: boolean;
  prompt: boolean;
  parallelToolCalls: typeof HONOURED | boolean;
  truncation: typeof HONOURED | 'auto' | 'disabled';
  include: typeof HONOURED | 'none';
}

/** Every field passed on (OpenAI's own protocol). */
export const ALL_SESSION_FIELDS: Readonly<SessionFieldSupport> = Object.freeze({
  reasoning: true,
  prompt: true,
  parallelToolCalls: HONOURED,
  truncation: HONOURED,
  include: HONOURED,
});

export interface ProviderAdapter {
  /** Catalog provider name, e.g. `local`, `openai`, `gemini`. */
  readonly name: string;
  /** Ratio used when the provider reports no token counts (documented per adapter). */
  readonly tokenRatio: { inputMsPerToken: number; outputMsPerToken: number };
  /** What this provider can do beyond audio (static per adapter). */
  readonly supports: Readonly<ProviderCapabilities>;
  /**
   * The adapter seeds a new connection with `config.history` (OpenAI protocol): ProviderBase may then
   * move a session to a new connection at a deadline or after a loss (docs/providers.md, "Continuity").
   * Absent: the adapter keeps its session across connections itself (Gemini) or not at all.
   */
  readonly replaysHistory?: boolean;
  /**
   * Opens one upstream session. Rejects on failure; ProviderBase retries and times it out. `trace`: the W3C
   * trace context headers of the relay's connect span, for an adapter that propagates the trace.
   */
  connect(
    config: UpstreamSessionConfig,
    onEvent: (event: UpstreamEvent) => void,
    signal: AbortSignal,
    trace?: Readonly<Record<string, string>>,
  ): Promise<UpstreamConnection>;
}
