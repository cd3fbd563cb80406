import { BYTES_PER_MS, REFERENCE_TOKENS } from '@s2s/core';
import { traceHeaders } from '@s2s/telemetry';
import type {
  ConversationItemCreateEvent,
  ConversationItemDeleteEvent,
  ConversationItemTruncateEvent,
  InputAudioBufferClearEvent,
  InputAudioBufferCommitEvent,
  OutputAudioBufferClearEvent,
  ResponseCancelEvent,
} from 'openai/resources/realtime/realtime';
import { Audio, checkBase64 } from '../../audio.js';
import { FlatMemo, FlatShape } from '../../hot/flat-json.js';
import { asciiBytes, frameBuffer } from '../../hot/frame-bytes.js';
import type { AudioFormats, NewItem, ResponseOptions, VoiceSettings } from '../../agent/types.js';
import { UpstreamError } from '../shared/errors.js';
import {
  contentPart,
  itemBody,
  neutralParam,
  num,
  openAIHistoryItem,
  openAIItemCreate,
  openAIResponseCreate,
  openAISessionUpdate,
  openAITokens,
  PCM16_FORMATS,
  str,
} from './protocol.js';
import { ALL_SESSION_FIELDS } from '../shared/types.js';
import type {
  OutputRef,
  ProviderAdapter,
  ProviderCapabilities,
  ResponseStatus,
  UpstreamConnection,
  UpstreamEvent,
  UpstreamRequestKind,
  UpstreamSessionConfig,
} from '../shared/types.js';
import { openUpstreamSocket, safeCode, WsUpstreamConnection, type WebSocket } from '../shared/ws-upstream.js';

export const OPENAI_REALTIME_URL = 'wss://api.openai.com/v1/realtime';
export { OPENAI_DEFAULT_VOICE, OPENAI_VOICES, openAIVoice, openAISessionUpdate } from './protocol.js';

/** What the GA API does beyond audio: all of the voice-agent model (decisions.md). */
export const OPENAI_CAPABILITIES: Readonly<ProviderCapabilities> = Object.freeze({
  inputTranscription: true,
  outputTranscription: true,
  textOutput: true,
  tools: true,
  semanticVad: true,
  manualTurns: true,
  noiseReduction: true,
  sessionUpdate: true,
  voiceChangeAfterAudio: false,
  // `audio/pcm` at 24 kHz, `audio/pcmu`, `audio/pcma` (the openai package's RealtimeAudioFormats).
  audioFormats: ['pcm16', 'pcmu', 'pcma'] as const,
  textInput: true,
  audioItems: true,
  systemAndAssistantItems: true,
  itemDelete: true,
  itemTruncate: true,
  responseOptions: true,
  sessionFields: ALL_SESSION_FIELDS,
});

/** How long an upstream `error` event waits to learn whether the socket closes right after it (fatal). */
const ERROR_SETTLE_MS = 200;
/** ws sends a Buffer as a binary frame unless told otherwise. */
const TEXT_FRAME = { binary: false } as const;
const APPEND_HEAD = asciiBytes('{"type":"input_audio_buffer.append","audio":"');
/** Errors a barge-in race produces on its own (cancelling a reply that just finished): not worth relaying. */
const BENIGN_ERROR_CODES = new Set(['response_cancel_not_active']);
/** Assistant audio items remembered for truncation after a barge-in. */
const MAX_TRACKED_ITEMS = 8;

export interface OpenAIRealtimeOptions {
  /** Catalog provider name; `openai` unless this adapter serves another endpoint of the same protocol. */
  name?: string;
  /** Base URL of the realtime endpoint; `?model=<provider_model>` is added. */
  url?: string;
  /** Sent as `Authorization: Bearer <apiKey>` (or in `apiKeyHeader`); omitted when null (a simulator without a key). */
  apiKey?: string | null;
  /** `api-key`: the key goes in an `api-key` header (Azure OpenAI) instead of `Authorization: Bearer`. */
  apiKeyHeader?: 'authorization' | 'api-key';
  /** Token ratio when a response reports no usage; default: input 1 token / 100 ms, output 1 / 50 ms. */
  tokenRatio?: { inputMsPerToken: number; outputMsPerToken: number };
  /** Send the W3C trace context on the upgrade request (our own simulator; never a vendor). */
  propagateTrace?: boolean;
  /** Opens the socket (default openUpstreamSocket); bench/relay/hot-path.ts hands in in-memory sockets. */
  openSocket?: typeof openUpstreamSocket;
}

/**
 * The OpenAI Realtime API (GA) over WebSocket. `connect` resolves once the upstream has acknowledged our
 * session.update (session.updated), so a refused configuration fails the connect rather than the session.
 */
export class OpenAIRealtimeAdapter implements ProviderAdapter {
  readonly name: string;
  readonly tokenRatio: { inputMsPerToken: number; outputMsPerToken: number };
  readonly supports = OPENAI_CAPABILITIES;
  readonly replaysHistory = true;
  private readonly url: string;
  private readonly apiKey: string | null;
  private readonly apiKeyHeader: 'authorization' | 'api-key';
  private readonly propagateTrace: boolean;
  private readonly openSocket: typeof openUpstreamSocket;

  constructor(opts: OpenAIRealtimeOptions = {}) {
    this.propagateTrace = opts.propagateTrace ?? false;
    this.openSocket = opts.openSocket ?? openUpstreamSocket;
    this.name = opts.name ?? 'openai';
    this.url = opts.url ?? OPENAI_REALTIME_URL;
    this.apiKey = opts.apiKey ?? null;
    this.apiKeyHeader = opts.apiKeyHeader ?? 'authorization';
    this.tokenRatio = opts.tokenRatio ?? { ...REFERENCE_TOKENS };
  }

  async connect(
    config: UpstreamSessionConfig,
    onEvent: (event: UpstreamEvent) => void,
    signal: AbortSignal,
    trace?: Readonly<Record<string, string>>,
  ): Promise<UpstreamConnection> {
    const url = new URL(this.url);
    url.searchParams.set('model', config.providerModel);
    const headers: Record<string, string> = {
      ...(this.propagateTrace ? (trace ?? traceHeaders()) : {}),
      ...(this.apiKey ? (this.apiKeyHeader === 'api-key' ? { 'api-key': this.apiKey } : { Authorization: `Bearer ${this.apiKey}` }) : {}),
    };
    const ws = await this.openSocket({ provider: this.name, url: url.toString(), headers, signal });
    const connection = new OpenAIRealtimeConnection(this.name, ws, onEvent);
    await connection.configure(config, signal);
    return connection;
  }
}

interface TrackedItem {
  itemId: string;
  bytes: number;
}

/** The members of an output audio delta the adapter reads (the hot upstream event). */
const DELTA = new FlatShape(['type', 'response_id', 'item_id', 'output_index', 'content_index', 'delta'], 5, false, {
  0: ['response.output_audio.delta', 'response.audio.delta'],
});
const deltaSlots: (string | number | undefined)[] = [];

/** Our requests carry event ids `gw_<kind>_<n>`, so that an `error` naming one tells which request failed. */
const REQUEST_ID = /^gw_([a-z_]+)_\d+$/;
const REQUEST_KINDS: ReadonlySet<string> = new Set<UpstreamRequestKind>([
  'update_session',
  'create_item',
  'delete_item',
  'truncate_item',
  'create_response',
  'cancel_response',
  'commit',
  'clear_output_audio',
]);

class OpenAIRealtimeConnection extends WsUpstreamConnection implements UpstreamConnection {
  private activeResponseId: string | null = null;
  /** responseId → its assistant audio item, for conversation.item.truncate. */
  private readonly items = new Map<string, TrackedItem>();
  /** The entry of `items` the last delta went to. */
  private trackedId: string | null = null;
  private trackedItem: TrackedItem | null = null;
  private pendingError: { message: string; timer: NodeJS.Timeout } | null = null;
  private requestSeq = 0;
  /** Input bytes appended since the buffer last became an item: the audio a transcription of that item covers. */
  private uncommittedBytes = 0;
  /** Committed user audio items awaiting their transcription: key → ms. */
  private readonly committedMs = new Map<string, number>();
  /** Audio transcribed since the previous response report, added to the next one. */
  private transcribedMs = 0;
  /** Continuity: the items a new connection is seeded with, and the id whose acknowledgement ends the set-up. */
  private replay: ConversationItemCreateEvent[] = [];
  private replayLast: string | null = null;
  /** The previous delta's members: its ids repeat on every delta of a response (see FlatShape.read). */
  private readonly deltaMemo = new FlatMemo();
  /** The connection's audio formats, set by its opening configuration for all of its life (G.711 carried as is). */
  private formats: AudioFormats = PCM16_FORMATS;

  configure(config: UpstreamSessionConfig, signal: AbortSignal): Promise<void> {
    const { providerModel: _model, history = [], formats, ...settings } = config;
    this.formats = { ...PCM16_FORMATS, ...formats };
    this.replay = history.flatMap((h) => openAIHistoryItem(h.key, h.item) ?? []);
    return this.awaitSetup(openAISessionUpdate(settings, true, undefined, this.formats) as unknown as Record<string, unknown>, signal);
  }

  /** Set-up, then the conversation so far: `connect` resolves once the provider has the last item. */
  private configuredStep(msg: Record<string, unknown>): void {
    if (msg.type === 'session.updated' && this.replayLast === null) {
      const last = this.replay.at(-1);
      if (!last) return this.configured?.resolve();
      this.replayLast = last.item.id ?? null;
      for (const item of this.replay) this.send(item as unknown as Record<string, unknown>);
      this.replay = [];
      return;
    }
    const id = str((msg.item as { id?: unknown } | undefined)?.id);
    if ((msg.type === 'conversation.item.done' || msg.type === 'conversation.item.created') && id !== null && id === this.replayLast) {
      this.configured?.resolve();
    }
  }

  appendAudio(audio: Audio): void {
    if (this.phase !== 'open' || audio.bytes === 0) return;
    this.uncommittedBytes += audio.pcm16Bytes;
    // Built by hand: this is the hot path, and base64 needs no JSON escaping. The client's base64 as it came.
    const b64 = audio.base64;
    const out = frameBuffer(APPEND_HEAD.length + b64.length + 2);
    out.set(APPEND_HEAD, 0);
    const end = audio.writeBase64To(out, APPEND_HEAD.length);
    out[end] = 0x22; // "
    out[end + 1] = 0x7d; // }
    this.ws.send(out, TEXT_FRAME);
  }

  private requestId(kind: UpstreamRequestKind): string {
    return `gw_${kind}_${++this.requestSeq}`;
  }

  commit(): void {
    this.send({ type: 'input_audio_buffer.commit', event_id: this.requestId('commit') } satisfies InputAudioBufferCommitEvent);
  }

  clear(): void {
    this.uncommittedBytes = 0;
    this.send({ type: 'input_audio_buffer.clear' } satisfies InputAudioBufferClearEvent);
  }

  createResponse(options?: ResponseOptions): void {
    this.send(openAIResponseCreate(options, this.requestId('create_response')) as unknown as Record<string, unknown>);
  }

  cancelResponse(responseId: string | null, playedMs: number): void {
    if (this.activeResponseId !== null) {
      this.send({
        type: 'response.cancel',
        event_id: this.requestId('cancel_response'),
        response_id: this.activeResponseId,
      } satisfies ResponseCancelEvent);
    }
    // Make the conversation match what the listener heard: cut the item at the audio actually played.
    const item = responseId !== null ? this.items.get(responseId) : (this.items.get(this.activeResponseId ?? '') ?? lastValue(this.items));
    if (!item) return;
    const itemMs = Math.floor(item.bytes / BYTES_PER_MS);
    const endMs = Math.max(0, Math.min(Math.floor(playedMs), itemMs));
    if (endMs < itemMs) {
      this.truncateItem(item.itemId, 0, endMs);
      item.bytes = endMs * BYTES_PER_MS;
    }
  }

  updateSession(settings: VoiceSettings): void {
    const { formats: _client, ...rest } = settings;
    this.send(openAISessionUpdate(rest, false, this.requestId('update_session'), this.formats) as unknown as Record<string, unknown>);
  }

  createItem(key: string, item: NewItem, previousKey: string | null): void {
    this.send(openAIItemCreate(key, item, previousKey, this.requestId('create_item')) as unknown as Record<string, unknown>);
  }

  deleteItem(key: string): void {
    this.send({
      type: 'conversation.item.delete',
      event_id: this.requestId('delete_item'),
      item_id: key,
    } satisfies ConversationItemDeleteEvent);
  }

  truncateItem(key: string, contentIndex: number, audioEndMs: number): void {
    this.send({
      type: 'conversation.item.truncate',
      event_id: this.requestId('truncate_item'),
      item_id: key,
      content_index: contentIndex,
      audio_end_ms: audioEndMs,
    } satisfies ConversationItemTruncateEvent);
  }

  clearOutputAudio(): void {
    this.send({ type: 'output_audio_buffer.clear', event_id: this.requestId('clear_output_audio') } satisfies OutputAudioBufferClearEvent);
  }

  /**
   * An output audio delta in compact JSON with strict base64 is read from the bytes (no JSON.parse, the
   * base64 carried as is); anything else, or any doubt, is parsed whole. Both read the same members.
   */
  protected override onFrame(data: WebSocket.RawData): void {
    if (!Buffer.isBuffer(data) || !DELTA.read(data, deltaSlots, this.deltaMemo)) return super.onFrame(data);
    const [type, responseId, itemId, outputIndex, contentIndex, delta] = deltaSlots;
    if (
      (type !== 'response.output_audio.delta' && type !== 'response.audio.delta') ||
      typeof responseId !== 'string' ||
      typeof delta !== 'string' ||
      (itemId !== undefined && typeof itemId !== 'string')
    )
      return super.onFrame(data);
    const bytes = checkBase64(delta);
    if (bytes < 0) return super.onFrame(data);
    if (this.pendingError) this.flushError(false);
    this.onAudioDelta(
      str(responseId),
      str(itemId),
      num(outputIndex),
      num(contentIndex),
      Audio.ofCheckedBase64(delta, bytes, this.formats.output),
    );
  }

  protected onMessage(msg: Record<string, unknown> | null): void {
    if (!msg || typeof msg.type !== 'string') return;
    if (this.pendingError && msg.type !== 'error') this.flushError(false);
    if (this.configured && msg.type !== 'error') return this.configuredStep(msg);
    switch (msg.type) {
      case 'session.updated':
        return this.emit({ type: 'session_updated' });
      case 'error':
        return this.onUpstreamError(msg);
      case 'input_audio_buffer.speech_started':
        return this.emit({ type: 'speech_started', audioStartMs: num(msg.audio_start_ms), ...key(msg.item_id) });
      case 'input_audio_buffer.speech_stopped':
        return this.emit({ type: 'speech_stopped', audioEndMs: num(msg.audio_end_ms), ...key(msg.item_id) });
      case 'input_audio_buffer.committed': {
        const itemKey = str(msg.item_id);
        if (!itemKey) return;
        this.committedMs.set(itemKey, Math.floor(this.uncommittedBytes / BYTES_PER_MS));
        this.uncommittedBytes = 0;
        return this.emit({ type: 'input_committed', itemKey, previousKey: str(msg.previous_item_id) });
      }
      case 'conversation.item.added':
      case 'conversation.item.created':
      case 'conversation.item.done': {
        const raw = msg.item as { id?: unknown } | undefined;
        const itemKey = str(raw?.id);
        const item = itemBody(raw);
        if (!itemKey || !item) return;
        if (msg.type === 'conversation.item.done') return this.emit({ type: 'item_done', itemKey, item });
        return this.emit({ type: 'item_added', itemKey, previousKey: str(msg.previous_item_id), item });
      }
      case 'conversation.item.deleted': {
        const itemKey = str(msg.item_id);
        if (itemKey) this.emit({ type: 'item_deleted', itemKey });
        return;
      }
      case 'conversation.item.truncated': {
        const itemKey = str(msg.item_id);
        if (itemKey)
          this.emit({ type: 'item_truncated', itemKey, contentIndex: num(msg.content_index), audioEndMs: num(msg.audio_end_ms) });
        return;
      }
      case 'conversation.item.input_audio_transcription.delta':
      case 'conversation.item.input_audio_transcription.completed':
      case 'conversation.item.input_audio_transcription.failed':
        return this.onInputTranscript(msg);
      case 'response.created': {
        const id = str((msg.response as { id?: unknown } | undefined)?.id);
        if (!id) return;
        this.activeResponseId = id;
        return this.emit({ type: 'response_created', responseId: id });
      }
      case 'response.output_audio.delta':
      case 'response.audio.delta': {
        const responseId = str(msg.response_id);
        // Carried to the client as the provider's base64 when it is strict base64 (no decode, no encode).
        const audio = typeof msg.delta === 'string' ? Audio.ofProviderBase64(msg.delta, this.formats.output) : null;
        return this.onAudioDelta(responseId, str(msg.item_id), num(msg.output_index), num(msg.content_index), audio);
      }
      case 'response.output_audio.done':
      case 'response.audio.done': {
        const responseId = str(msg.response_id);
        const itemKey = str(msg.item_id);
        if (!responseId) return;
        if (itemKey === null) return this.emit({ type: 'audio_done', responseId });
        return this.emit({
          type: 'audio_done',
          responseId,
          itemKey,
          outputIndex: num(msg.output_index),
          contentIndex: num(msg.content_index),
        });
      }
      case 'response.done': {
        const response = (msg.response ?? {}) as { id?: unknown; status?: unknown; usage?: unknown };
        const responseId = str(response.id);
        if (!responseId) return;
        if (this.activeResponseId === responseId) this.activeResponseId = null;
        const tokens = openAITokens(response.usage, this.transcribedMs);
        if (tokens) this.transcribedMs = 0;
        return this.emit({ type: 'response_done', responseId, status: responseStatus(response.status), tokens });
      }
      default:
        return this.onOutputEvent(msg);
    }
  }

  private onAudioDelta(
    responseId: string | null,
    itemKey: string | null,
    outputIndex: number,
    contentIndex: number,
    audio: Audio | null,
  ): void {
    if (!responseId || !audio || audio.bytes === 0) return;
    this.track(responseId, itemKey, audio.pcm16Bytes);
    if (itemKey === null) return this.emit({ type: 'audio_delta', responseId, audio });
    return this.emit({ type: 'audio_delta', responseId, audio, itemKey, outputIndex, contentIndex });
  }

  /** Output items, content parts, text, transcripts and function call arguments of a response. */
  private onOutputEvent(msg: Record<string, unknown>): void {
    const responseId = str(msg.response_id);
    if (!responseId) return;
    if (msg.type === 'response.output_item.added' || msg.type === 'response.output_item.done') {
      const raw = msg.item as { id?: unknown } | undefined;
      const itemKey = str(raw?.id);
      const item = itemBody(raw);
      if (!itemKey || !item) return;
      const ref: OutputRef = { responseId, itemKey, outputIndex: num(msg.output_index) };
      return this.emit({ type: msg.type === 'response.output_item.added' ? 'output_item_added' : 'output_item_done', ...ref, item });
    }
    const itemKey = str(msg.item_id);
    if (!itemKey) return;
    const ref: OutputRef = { responseId, itemKey, outputIndex: num(msg.output_index) };
    const contentIndex = num(msg.content_index);
    switch (msg.type) {
      case 'response.content_part.added':
      case 'response.content_part.done': {
        const part = contentPart(msg.part, 'assistant');
        if (!part) return;
        const type = msg.type === 'response.content_part.added' ? 'content_part_added' : 'content_part_done';
        return this.emit({ type, ...ref, contentIndex, part });
      }
      case 'response.output_text.delta':
      case 'response.text.delta':
        return this.emit({ type: 'text_delta', ...ref, contentIndex, delta: String(msg.delta ?? '') });
      case 'response.output_text.done':
      case 'response.text.done':
        return this.emit({ type: 'text_done', ...ref, contentIndex, text: String(msg.text ?? '') });
      case 'response.output_audio_transcript.delta':
      case 'response.audio_transcript.delta':
        return this.emit({ type: 'audio_transcript_delta', ...ref, contentIndex, delta: String(msg.delta ?? '') });
      case 'response.output_audio_transcript.done':
      case 'response.audio_transcript.done':
        return this.emit({ type: 'audio_transcript_done', ...ref, contentIndex, transcript: String(msg.transcript ?? '') });
      case 'response.function_call_arguments.delta':
        return this.emit({ type: 'function_call_arguments_delta', ...ref, callId: str(msg.call_id) ?? '', delta: String(msg.delta ?? '') });
      case 'response.function_call_arguments.done':
        return this.emit({
          type: 'function_call_arguments_done',
          ...ref,
          callId: str(msg.call_id) ?? '',
          name: typeof msg.name === 'string' ? msg.name : '',
          arguments: String(msg.arguments ?? ''),
        });
      default:
        return;
    }
  }

  private onInputTranscript(msg: Record<string, unknown>): void {
    const itemKey = str(msg.item_id);
    if (!itemKey) return;
    const contentIndex = num(msg.content_index);
    if (msg.type === 'conversation.item.input_audio_transcription.delta') {
      return this.emit({ type: 'input_transcript_delta', itemKey, contentIndex, delta: String(msg.delta ?? '') });
    }
    if (msg.type === 'conversation.item.input_audio_transcription.failed') {
      this.committedMs.delete(itemKey);
      // The provider's text may name the provider or a model: the client gets a generic one.
      return this.emit({ type: 'input_transcript_failed', itemKey, contentIndex, message: 'The transcription of this item failed.' });
    }
    const usage = msg.usage as { type?: unknown; seconds?: unknown } | undefined;
    const committed = this.committedMs.get(itemKey) ?? 0;
    this.committedMs.delete(itemKey);
    this.transcribedMs += usage?.type === 'duration' && typeof usage.seconds === 'number' ? Math.round(usage.seconds * 1000) : committed;
    return this.emit({ type: 'input_transcript_completed', itemKey, contentIndex, transcript: String(msg.transcript ?? '') });
  }

  private track(responseId: string, itemId: string | null, bytes: number): void {
    // Deltas come in runs of one response: its entry is at hand without a lookup. (Only this method changes
    // the map, and an entry it evicts is never the one just tracked.)
    if (responseId === this.trackedId && this.trackedItem !== null) {
      this.trackedItem.bytes += bytes;
      return;
    }
    let item = this.items.get(responseId);
    if (item) item.bytes += bytes;
    else {
      if (!itemId) return;
      item = { itemId, bytes };
      this.items.set(responseId, item);
      if (this.items.size > MAX_TRACKED_ITEMS) this.items.delete(this.items.keys().next().value!);
    }
    this.trackedId = responseId;
    this.trackedItem = item;
  }

  private onUpstreamError(msg: Record<string, unknown>): void {
    const error = (msg.error ?? {}) as { code?: unknown; type?: unknown; param?: unknown; event_id?: unknown };
    const code = safeCode(error.code ?? error.type);
    if (this.configured) {
      // The configuration itself was refused: not worth retrying with the same configuration.
      this.configured.reject(new UpstreamError(this.provider, 'rejected'));
      return;
    }
    if (BENIGN_ERROR_CODES.has(code)) return;
    if (code === 'session_expiring') {
      // The simulator's announcement of the cap (OpenAI itself sends none): ProviderBase moves the session.
      const left = /ends in (\d+) ms/.exec(typeof msg.error === 'object' ? String((msg.error as { message?: unknown }).message) : '');
      return this.emit({ type: 'expiring', timeLeftMs: left ? Number(left[1]) : 0 });
    }
    // OpenAI's cap reached: the close (1001) follows, which ProviderBase answers with a new connection.
    if (code === 'session_expired') return;
    const request = typeof error.event_id === 'string' ? REQUEST_ID.exec(error.event_id)?.[1] : undefined;
    if (request !== undefined && REQUEST_KINDS.has(request)) {
      // A refusal of one of our requests: the session goes on.
      if (this.pendingError) this.flushError(false);
      const param = neutralParam(error.param);
      return this.emit({
        type: 'error',
        message: `provider ${this.provider} refused a request (${code})`,
        fatal: false,
        request: request as UpstreamRequestKind,
        ...(param !== undefined ? { param } : {}),
      });
    }
    if (this.pendingError) this.flushError(false);
    // Whether it is fatal shows in what follows: the upstream closing right after it.
    const timer = setTimeout(() => this.flushError(this.ws.readyState !== this.ws.OPEN), ERROR_SETTLE_MS);
    timer.unref();
    this.pendingError = { message: `provider ${this.provider} reported an error (${code})`, timer };
  }

  private flushError(fatal: boolean): void {
    const pending = this.pendingError;
    if (!pending) return;
    this.pendingError = null;
    clearTimeout(pending.timer);
    this.emit({ type: 'error', message: pending.message, fatal });
  }

  protected onClose(code: number): void {
    if (this.configured) {
      const kind = code === 1008 ? 'unauthorized' : code >= 4000 || code === 1003 || code === 1007 ? 'rejected' : 'unavailable';
      this.configured.reject(new UpstreamError(this.provider, kind, { status: code }));
      return;
    }
    if (this.phase === 'closed') return;
    const unexpected = !this.closingByUs;
    this.flushError(unexpected);
    this.emit({ type: 'closed', unexpected });
    this.phase = 'closed';
  }
}

function key(itemId: unknown): { itemKey?: string } {
  const k = str(itemId);
  return k === null ? {} : { itemKey: k };
}

function responseStatus(status: unknown): ResponseStatus {
  return status === 'completed' || status === 'cancelled' || status === 'incomplete' ? status : 'failed';
}

function lastValue<K, V>(map: Map<K, V>): V | undefined {
  let last: V | undefined;
  for (const v of map.values()) last = v;
  return last;
}
