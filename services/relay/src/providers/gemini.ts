import { BYTES_PER_MS } from '@s2s/core';
import { UpstreamError, type UpstreamErrorKind } from './errors.js';
import { Resampler24kTo16k } from './resample.js';
import { ZERO_TOKENS, type TokenReport } from '../agent-model.js';
import type {
  ProviderAdapter,
  ProviderCapabilities,
  ResponseStatus,
  UpstreamConnection,
  UpstreamEvent,
  UpstreamSessionConfig,
  UpstreamTokenUsage,
} from './types.js';
import { openUpstreamSocket, WsUpstreamConnection } from './ws-upstream.js';

export const GEMINI_LIVE_URL =
  'wss://generativelanguage.googleapis.com/ws/google.ai.generativelanguage.v1beta.GenerativeService.BidiGenerateContent';
export const GEMINI_DEFAULT_VOICE = 'Puck';
const GEMINI_VOICE_NAMES = [
  'Puck',
  'Charon',
  'Kore',
  'Fenrir',
  'Aoede',
  'Leda',
  'Orus',
  'Zephyr',
  'Achernar',
  'Achird',
  'Algenib',
  'Algieba',
  'Alnilam',
  'Autonoe',
  'Callirrhoe',
  'Despina',
  'Enceladus',
  'Erinome',
  'Gacrux',
  'Iapetus',
  'Laomedeia',
  'Pulcherrima',
  'Rasalgethi',
  'Sadachbia',
  'Sadaltager',
  'Schedar',
  'Sulafat',
  'Umbriel',
  'Vindemiatrix',
  'Zubenelgenubi',
];
const GEMINI_VOICES = new Map(GEMINI_VOICE_NAMES.map((v) => [v.toLowerCase(), v]));

/** Gemini counts audio at 32 tokens per second in both directions: the fallback when no usage is reported. */
export const GEMINI_TOKEN_RATIO = Object.freeze({ inputMsPerToken: 1000 / 32, outputMsPerToken: 1000 / 32 });

const INPUT_MIME = 'audio/pcm;rate=16000';
/** After turnComplete, how long to wait for a usageMetadata message that may follow it. */
const USAGE_GRACE_MS = 300;

/**
 * Audio in, audio out: the rest of the voice-agent model is not mapped yet, so the relay refuses it up front.
 * Setup fixes the voice and activity detection: nothing changes after the upstream opened.
 */
export const GEMINI_CAPABILITIES: Readonly<ProviderCapabilities> = Object.freeze({
  inputTranscription: false,
  outputTranscription: false,
  textOutput: false,
  tools: false,
  semanticVad: false,
  manualTurns: false,
  noiseReduction: false,
  sessionUpdate: false,
  voiceChangeAfterAudio: false,
  textInput: false,
  audioItems: false,
  systemAndAssistantItems: false,
  itemDelete: false,
  itemTruncate: false,
  responseOptions: false,
});

export interface GeminiLiveOptions {
  url?: string;
  apiKey: string;
}

/** Maps a requested voice to a Gemini prebuilt voice (case-insensitive); anything else gets the default. */
export function geminiVoice(voice: string | undefined): string {
  return (voice && GEMINI_VOICES.get(voice.toLowerCase())) ?? GEMINI_DEFAULT_VOICE;
}

export function geminiSetup(config: UpstreamSessionConfig): Record<string, unknown> {
  const model = config.providerModel.startsWith('models/') ? config.providerModel : `models/${config.providerModel}`;
  const td = config.turnDetection;
  const silence = td?.type === 'server_vad' ? td.silenceDurationMs : undefined;
  return {
    setup: {
      model,
      generationConfig: {
        responseModalities: ['AUDIO'],
        speechConfig: { voiceConfig: { prebuiltVoiceConfig: { voiceName: geminiVoice(config.voice) } } },
      },
      realtimeInputConfig: {
        automaticActivityDetection: { disabled: false, ...(silence !== undefined ? { silenceDurationMs: silence } : {}) },
      },
    },
  };
}

/**
 * Gemini Live (BidiGenerateContent over WebSocket). Differences the adapter absorbs:
 * - input is sent as 16 kHz PCM (resampled from 24 kHz), output arrives as 24 kHz PCM;
 * - turns are detected by Gemini's automatic activity detection; commit / response.create flush the stream
 *   with `audioStreamEnd`; there is no input buffer to clear and no voice change mid-session;
 * - there are no response ids: the adapter numbers model turns `gemini_resp_1`, `gemini_resp_2`, …;
 * - there is no cancel: a barge-in ends the response here (response_done cancelled) and drops the rest of
 *   that model turn; Gemini's own interruption (`interrupted`) yields speech_started + a cancelled response.
 * The key travels in the `x-goog-api-key` header (as Google's SDK sends it), never in the URL.
 */
export class GeminiLiveAdapter implements ProviderAdapter {
  readonly name = 'gemini';
  readonly tokenRatio = { ...GEMINI_TOKEN_RATIO };
  readonly supports = GEMINI_CAPABILITIES;
  private readonly url: string;
  private readonly apiKey: string;

  constructor(opts: GeminiLiveOptions) {
    this.url = opts.url ?? GEMINI_LIVE_URL;
    this.apiKey = opts.apiKey;
  }

  async connect(config: UpstreamSessionConfig, onEvent: (event: UpstreamEvent) => void, signal: AbortSignal): Promise<UpstreamConnection> {
    const ws = await openUpstreamSocket({ provider: this.name, url: this.url, headers: { 'x-goog-api-key': this.apiKey }, signal });
    const connection = new GeminiLiveConnection(this.name, ws, onEvent);
    await connection.configure(config, signal);
    return connection;
  }
}

interface Turn {
  responseId: string;
  /** Ended here by a barge-in: the rest of this model turn is dropped. */
  cancelled: boolean;
}

class GeminiLiveConnection extends WsUpstreamConnection implements UpstreamConnection {
  private readonly resampler = new Resampler24kTo16k();
  private inputBytes = 0;
  private streamOpen = false;
  private responseSeq = 0;
  private turn: Turn | null = null;
  /** Usage reported during the current turn (Gemini reports it per turn, with or just after turnComplete). */
  private turnUsage: TokenReport | null = null;
  private pendingDone: { responseId: string; status: ResponseStatus; timer: NodeJS.Timeout } | null = null;
  /** A usage report arriving now belongs to a turn already settled without it; it must not leak into the next. */
  private staleUsage = false;

  configure(config: UpstreamSessionConfig, signal: AbortSignal): Promise<void> {
    return this.awaitSetup(geminiSetup(config), signal);
  }

  appendAudio(pcm: Buffer): void {
    if (this.phase !== 'open') return;
    this.inputBytes += pcm.length;
    const resampled = this.resampler.push(pcm);
    if (resampled.length === 0) return;
    this.streamOpen = true;
    this.ws.send(`{"realtimeInput":{"audio":{"data":"${resampled.toString('base64')}","mimeType":"${INPUT_MIME}"}}}`);
  }

  commit(): void {
    this.endStream();
  }

  clear(): void {
    // Gemini consumes input as it streams: there is no buffer left to clear.
  }

  createResponse(): void {
    this.endStream();
  }

  cancelResponse(_responseId: string | null, _playedMs: number): void {
    const turn = this.turn;
    if (!turn || turn.cancelled) return;
    turn.cancelled = true;
    // Delivered after the caller's cancel returns, like every other upstream event: no re-entrancy.
    queueMicrotask(() => this.emit({ type: 'response_done', responseId: turn.responseId, status: 'cancelled', tokens: null }));
  }

  updateSession(): void {
    // Never called: GEMINI_CAPABILITIES.sessionUpdate is false (the Live API fixes its configuration at setup).
  }

  // Never called: GEMINI_CAPABILITIES refuses items up front.
  createItem(): void {}
  deleteItem(): void {}
  truncateItem(): void {}

  clearOutputAudio(): void {
    // Output is not buffered upstream: what was sent is the relay's to drop.
  }

  private endStream(): void {
    if (!this.streamOpen) return;
    this.streamOpen = false;
    this.send({ realtimeInput: { audioStreamEnd: true } });
  }

  protected onMessage(msg: Record<string, unknown> | null): void {
    if (!msg) return;
    if (msg.setupComplete !== undefined) {
      this.configured?.resolve();
      return;
    }
    if (this.phase !== 'open') return;
    // Usage first: it may ride on the very message that completes the turn.
    const audio = msg.usageMetadata !== undefined ? geminiUsage(msg.usageMetadata) : null;
    const usage = audio
      ? { ...ZERO_TOKENS, inputAudioTokens: audio.input_audio_tokens, outputAudioTokens: audio.output_audio_tokens }
      : null;
    if (usage) this.onUsage(usage);
    const content = msg.serverContent as ServerContent | undefined;
    if (content && typeof content === 'object') this.onContent(content);
    if (msg.goAway !== undefined) this.onGoAway();
  }

  private onUsage(usage: TokenReport): void {
    if (this.pendingDone) {
      const pending = this.pendingDone;
      this.pendingDone = null;
      clearTimeout(pending.timer);
      this.emit({ type: 'response_done', responseId: pending.responseId, status: pending.status, tokens: usage });
      return;
    }
    if (this.staleUsage) return;
    this.turnUsage = usage;
  }

  private onContent(content: ServerContent): void {
    const parts = content.modelTurn?.parts;
    if (Array.isArray(parts)) {
      for (const part of parts) {
        const audio = outputAudio(part);
        if (audio) this.onAudio(audio);
      }
    }
    if (content.interrupted === true) {
      // Gemini stopped its answer because it heard the user: that is the start of speech for the relay.
      this.emit({ type: 'speech_started', audioStartMs: Math.floor(this.inputBytes / BYTES_PER_MS) });
      this.finishTurn('cancelled');
    } else if (content.turnComplete === true) {
      this.finishTurn('completed');
    }
  }

  private onAudio(pcm: Buffer): void {
    this.flushPendingDone();
    this.staleUsage = false;
    if (!this.turn) {
      this.turn = { responseId: `gemini_resp_${++this.responseSeq}`, cancelled: false };
      this.emit({ type: 'response_created', responseId: this.turn.responseId });
    }
    if (this.turn.cancelled) return;
    this.emit({ type: 'audio_delta', responseId: this.turn.responseId, pcm });
  }

  private finishTurn(status: ResponseStatus): void {
    const turn = this.turn;
    this.turn = null;
    const usage = this.turnUsage;
    this.turnUsage = null;
    if (!turn || turn.cancelled) {
      this.staleUsage = true;
      return;
    }
    if (status === 'completed') this.emit({ type: 'audio_done', responseId: turn.responseId });
    if (usage) {
      this.emit({ type: 'response_done', responseId: turn.responseId, status, tokens: usage });
      return;
    }
    const timer = setTimeout(() => this.flushPendingDone(), USAGE_GRACE_MS);
    timer.unref();
    this.pendingDone = { responseId: turn.responseId, status, timer };
  }

  /** Reports a finished turn whose usage did not come: the base then applies the token ratio. */
  private flushPendingDone(): void {
    const pending = this.pendingDone;
    if (!pending) return;
    this.pendingDone = null;
    clearTimeout(pending.timer);
    this.staleUsage = true;
    this.emit({ type: 'response_done', responseId: pending.responseId, status: pending.status, tokens: null });
  }

  /** Gemini announces the end of the connection; the relay reconnects rather than lose it mid-answer. */
  private onGoAway(): void {
    this.flushPendingDone();
    this.emit({ type: 'closed', unexpected: true });
    this.phase = 'closed';
    this.ws.close(1000);
  }

  protected onClose(code: number, reason: Buffer): void {
    if (this.configured) {
      this.configured.reject(new UpstreamError(this.provider, setupRefusal(code, reason.toString('utf8')), { status: code }));
      return;
    }
    if (this.phase === 'closed') return;
    this.flushPendingDone();
    const unexpected = !this.closingByUs;
    if (unexpected && code !== 1000) {
      this.emit({ type: 'error', message: `provider ${this.provider} closed the session (code ${code})`, fatal: true });
    }
    this.emit({ type: 'closed', unexpected });
    this.phase = 'closed';
  }
}

interface ServerContent {
  modelTurn?: { parts?: unknown[] };
  turnComplete?: boolean;
  interrupted?: boolean;
}

/** A part's inline 24 kHz PCM audio, decoded; null for anything else (text, other rates). */
function outputAudio(part: unknown): Buffer | null {
  const inline = (part as { inlineData?: { mimeType?: unknown; data?: unknown } } | null)?.inlineData;
  if (!inline || typeof inline.data !== 'string' || typeof inline.mimeType !== 'string') return null;
  const mime = inline.mimeType.toLowerCase();
  if (!mime.startsWith('audio/pcm')) return null;
  const rate = /rate=(\d+)/.exec(mime)?.[1];
  if (rate !== undefined && rate !== '24000') return null;
  const pcm = Buffer.from(inline.data, 'base64');
  return pcm.length > 0 ? pcm : null;
}

/** usageMetadata → audio token counts (the AUDIO entries of the prompt and response details). */
export function geminiUsage(metadata: unknown): UpstreamTokenUsage | null {
  if (!metadata || typeof metadata !== 'object') return null;
  const m = metadata as { promptTokensDetails?: unknown; responseTokensDetails?: unknown };
  const input = audioTokens(m.promptTokensDetails);
  const output = audioTokens(m.responseTokensDetails);
  if (input === null && output === null) return null;
  return { input_audio_tokens: input ?? 0, output_audio_tokens: output ?? 0 };
}

function audioTokens(details: unknown): number | null {
  if (!Array.isArray(details)) return null;
  let total: number | null = null;
  for (const d of details) {
    const entry = d as { modality?: unknown; tokenCount?: unknown } | null;
    if (
      entry?.modality === 'AUDIO' &&
      typeof entry.tokenCount === 'number' &&
      Number.isInteger(entry.tokenCount) &&
      entry.tokenCount >= 0
    ) {
      total = (total ?? 0) + entry.tokenCount;
    }
  }
  return total;
}

/** A session closed before setupComplete: credentials, a refused request, or an outage. */
function setupRefusal(code: number, reason: string): UpstreamErrorKind {
  if (/api key|api_key|permission|unauthenticated|credential/i.test(reason)) return 'unauthorized';
  if (code === 1007 || code === 1008 || code === 1003 || (code >= 4000 && code < 5000)) return 'rejected';
  return 'unavailable';
}
