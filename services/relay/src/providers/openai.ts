import { BYTES_PER_MS, REFERENCE_TOKENS } from '@s2s/core';
import { UpstreamError } from './errors.js';
import type {
  ProviderAdapter,
  ResponseStatus,
  UpstreamConnection,
  UpstreamEvent,
  UpstreamSessionConfig,
  UpstreamTokenUsage,
} from './types.js';
import { openUpstreamSocket, safeCode, WsUpstreamConnection } from './ws-upstream.js';

export const OPENAI_REALTIME_URL = 'wss://api.openai.com/v1/realtime';
export const OPENAI_VOICES: ReadonlySet<string> = new Set([
  'alloy',
  'ash',
  'ballad',
  'coral',
  'echo',
  'sage',
  'shimmer',
  'verse',
  'marin',
  'cedar',
]);
export const OPENAI_DEFAULT_VOICE = 'alloy';

/** How long an upstream `error` event waits to learn whether the socket closes right after it (fatal). */
const ERROR_SETTLE_MS = 200;
/** Errors a barge-in race produces on its own (cancelling a reply that just finished): not worth relaying. */
const BENIGN_ERROR_CODES = new Set(['response_cancel_not_active']);
/** Assistant audio items remembered for truncation after a barge-in. */
const MAX_TRACKED_ITEMS = 8;

export interface OpenAIRealtimeOptions {
  /** Catalog provider name; `openai` unless this adapter serves another endpoint of the same protocol. */
  name?: string;
  /** Base URL of the realtime endpoint; `?model=<provider_model>` is added. */
  url?: string;
  /** Sent as `Authorization: Bearer <apiKey>`; omitted when null (a simulator without a key). */
  apiKey?: string | null;
  /** Token ratio when a response reports no usage; default: input 1 token / 100 ms, output 1 / 50 ms. */
  tokenRatio?: { inputMsPerToken: number; outputMsPerToken: number };
}

/**
 * The OpenAI Realtime API (GA) over WebSocket. `connect` resolves once the upstream has acknowledged our
 * session.update (session.updated), so a refused configuration fails the connect rather than the session.
 */
export class OpenAIRealtimeAdapter implements ProviderAdapter {
  readonly name: string;
  readonly tokenRatio: { inputMsPerToken: number; outputMsPerToken: number };
  private readonly url: string;
  private readonly apiKey: string | null;

  constructor(opts: OpenAIRealtimeOptions = {}) {
    this.name = opts.name ?? 'openai';
    this.url = opts.url ?? OPENAI_REALTIME_URL;
    this.apiKey = opts.apiKey ?? null;
    this.tokenRatio = opts.tokenRatio ?? { ...REFERENCE_TOKENS };
  }

  async connect(config: UpstreamSessionConfig, onEvent: (event: UpstreamEvent) => void, signal: AbortSignal): Promise<UpstreamConnection> {
    const url = new URL(this.url);
    url.searchParams.set('model', config.providerModel);
    const headers: Record<string, string> = this.apiKey ? { Authorization: `Bearer ${this.apiKey}` } : {};
    const ws = await openUpstreamSocket({ provider: this.name, url: url.toString(), headers, signal });
    const connection = new OpenAIRealtimeConnection(this.name, ws, onEvent);
    await connection.configure(config, signal);
    return connection;
  }
}

/** Maps a requested voice to one the API knows; anything else gets the default (decisions.md, Realtime). */
export function openAIVoice(voice: string | undefined): string {
  return voice && OPENAI_VOICES.has(voice) ? voice : OPENAI_DEFAULT_VOICE;
}

/**
 * The GA `session.update`. `initial`: the whole configuration (server VAD and a voice always set);
 * otherwise only what `config` names changes.
 */
export function openAISessionUpdate(config: Partial<UpstreamSessionConfig>, initial: boolean): Record<string, unknown> {
  const input: Record<string, unknown> = { format: { type: 'audio/pcm', rate: 24000 } };
  const output: Record<string, unknown> = { format: { type: 'audio/pcm', rate: 24000 } };
  if (initial || config.turnDetection !== undefined) {
    const silence = config.turnDetection?.silenceDurationMs;
    input.turn_detection = { type: 'server_vad', ...(silence !== undefined ? { silence_duration_ms: silence } : {}) };
  }
  if (initial || config.voice !== undefined) output.voice = openAIVoice(config.voice);
  return {
    type: 'session.update',
    session: { type: 'realtime', output_modalities: ['audio'], audio: { input, output } },
  };
}

interface TrackedItem {
  itemId: string;
  bytes: number;
}

class OpenAIRealtimeConnection extends WsUpstreamConnection implements UpstreamConnection {
  private activeResponseId: string | null = null;
  /** responseId → its assistant audio item, for conversation.item.truncate. */
  private readonly items = new Map<string, TrackedItem>();
  private pendingError: { message: string; timer: NodeJS.Timeout } | null = null;

  configure(config: UpstreamSessionConfig, signal: AbortSignal): Promise<void> {
    return this.awaitSetup(openAISessionUpdate(config, true), signal);
  }

  appendAudio(pcm: Buffer): void {
    if (this.phase !== 'open' || pcm.length === 0) return;
    // Built by hand: this is the hot path, and base64 needs no JSON escaping.
    this.ws.send(Buffer.from(`{"type":"input_audio_buffer.append","audio":"${pcm.toString('base64')}"}`, 'latin1'), { binary: false });
  }

  commit(): void {
    this.send({ type: 'input_audio_buffer.commit' });
  }

  clear(): void {
    this.send({ type: 'input_audio_buffer.clear' });
  }

  createResponse(): void {
    this.send({ type: 'response.create' });
  }

  cancelResponse(responseId: string | null, playedMs: number): void {
    if (this.activeResponseId !== null) {
      this.send({ type: 'response.cancel', response_id: this.activeResponseId });
    }
    // Make the conversation match what the listener heard: cut the item at the audio actually played.
    const item = responseId !== null ? this.items.get(responseId) : (this.items.get(this.activeResponseId ?? '') ?? lastValue(this.items));
    if (!item) return;
    const itemMs = Math.floor(item.bytes / BYTES_PER_MS);
    const endMs = Math.max(0, Math.min(Math.floor(playedMs), itemMs));
    if (endMs < itemMs) {
      this.send({ type: 'conversation.item.truncate', item_id: item.itemId, content_index: 0, audio_end_ms: endMs });
      item.bytes = endMs * BYTES_PER_MS;
    }
  }

  updateSession(config: Partial<UpstreamSessionConfig>): void {
    if (config.voice === undefined && config.turnDetection === undefined) return;
    this.send(openAISessionUpdate(config, false));
  }

  protected onMessage(msg: Record<string, unknown> | null): void {
    if (!msg || typeof msg.type !== 'string') return;
    if (this.pendingError && msg.type !== 'error') this.flushError(false);
    switch (msg.type) {
      case 'session.updated':
        this.configured?.resolve();
        return;
      case 'error':
        return this.onUpstreamError(msg);
      case 'input_audio_buffer.speech_started':
        return this.emit({ type: 'speech_started', audioStartMs: num(msg.audio_start_ms) });
      case 'input_audio_buffer.speech_stopped':
        return this.emit({ type: 'speech_stopped', audioEndMs: num(msg.audio_end_ms) });
      case 'response.created': {
        const id = str((msg.response as { id?: unknown } | undefined)?.id);
        if (!id) return;
        this.activeResponseId = id;
        return this.emit({ type: 'response_created', responseId: id });
      }
      case 'response.output_audio.delta':
      case 'response.audio.delta': {
        const responseId = str(msg.response_id);
        const delta = typeof msg.delta === 'string' ? Buffer.from(msg.delta, 'base64') : null;
        if (!responseId || !delta || delta.length === 0) return;
        this.track(responseId, str(msg.item_id), delta.length);
        return this.emit({ type: 'audio_delta', responseId, pcm: delta });
      }
      case 'response.output_audio.done':
      case 'response.audio.done': {
        const responseId = str(msg.response_id);
        if (responseId) this.emit({ type: 'audio_done', responseId });
        return;
      }
      case 'response.done': {
        const response = (msg.response ?? {}) as { id?: unknown; status?: unknown; usage?: unknown };
        const responseId = str(response.id);
        if (!responseId) return;
        if (this.activeResponseId === responseId) this.activeResponseId = null;
        return this.emit({
          type: 'response_done',
          responseId,
          status: responseStatus(response.status),
          usage: openAIUsage(response.usage),
        });
      }
      default:
        return;
    }
  }

  private track(responseId: string, itemId: string | null, bytes: number): void {
    const known = this.items.get(responseId);
    if (known) {
      known.bytes += bytes;
      return;
    }
    if (!itemId) return;
    this.items.set(responseId, { itemId, bytes });
    if (this.items.size > MAX_TRACKED_ITEMS) this.items.delete(this.items.keys().next().value!);
  }

  private onUpstreamError(msg: Record<string, unknown>): void {
    const code = safeCode((msg.error as { code?: unknown } | undefined)?.code ?? (msg.error as { type?: unknown } | undefined)?.type);
    if (this.configured) {
      // The configuration itself was refused: not worth retrying with the same configuration.
      this.configured.reject(new UpstreamError(this.provider, 'rejected'));
      return;
    }
    if (BENIGN_ERROR_CODES.has(code)) return;
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

function responseStatus(status: unknown): ResponseStatus {
  return status === 'completed' || status === 'cancelled' || status === 'incomplete' ? status : 'failed';
}

/** `response.usage` → audio token counts; null when the response reported no usage. */
export function openAIUsage(usage: unknown): UpstreamTokenUsage | null {
  if (!usage || typeof usage !== 'object') return null;
  const u = usage as { input_token_details?: { audio_tokens?: unknown }; output_token_details?: { audio_tokens?: unknown } };
  const input = u.input_token_details?.audio_tokens;
  const output = u.output_token_details?.audio_tokens;
  if (!isCount(input) && !isCount(output)) return null;
  return { input_audio_tokens: isCount(input) ? input : 0, output_audio_tokens: isCount(output) ? output : 0 };
}

function isCount(v: unknown): v is number {
  return typeof v === 'number' && Number.isInteger(v) && v >= 0;
}

function num(v: unknown): number {
  return typeof v === 'number' && Number.isFinite(v) ? v : 0;
}

function str(v: unknown): string | null {
  return typeof v === 'string' && v.length > 0 ? v : null;
}

function lastValue<K, V>(map: Map<K, V>): V | undefined {
  let last: V | undefined;
  for (const v of map.values()) last = v;
  return last;
}
