import type { LiveClientMessage, LiveServerContent, LiveServerMessage, Part } from '@google/genai';
import { BYTES_PER_MS } from '@s2s/core';
import type { SessionSettings, TokenReport } from '../agent-model.js';
import { UpstreamError, type UpstreamErrorKind } from './errors.js';
import {
  geminiInstruction,
  geminiRefusal,
  geminiSetup,
  geminiTools,
  geminiUpdateRefusal,
  type GeminiSessionConfig,
} from './gemini-setup.js';
import { geminiTokenReport } from './gemini-usage.js';
import { Resampler24kTo16k } from './resample.js';
import type {
  ProviderAdapter,
  ProviderCapabilities,
  ResponseStatus,
  UpstreamConnection,
  UpstreamEvent,
  UpstreamSessionConfig,
} from './types.js';
import { openUpstreamSocket, WsUpstreamConnection, type WebSocket } from './ws-upstream.js';

export { GEMINI_DEFAULT_VOICE, geminiVoice } from './gemini-setup.js';

export const GEMINI_LIVE_URL =
  'wss://generativelanguage.googleapis.com/ws/google.ai.generativelanguage.v1beta.GenerativeService.BidiGenerateContent';
/** Gemini counts audio at 32 tokens per second in both directions: the fallback when no usage is reported. */
export const GEMINI_TOKEN_RATIO = Object.freeze({ inputMsPerToken: 1000 / 32, outputMsPerToken: 1000 / 32 });

const INPUT_MIME = 'audio/pcm;rate=16000';
/** After turnComplete, how long to wait for a usageMetadata message that may follow it. */
const USAGE_GRACE_MS = 300;

/**
 * What Gemini Live can do beyond audio (the relay refuses the rest up front). Items cannot be deleted or
 * truncated (Gemini keeps its own history), and setup fixes voice, turn detection, modality and transcription:
 * a later change to those is refused by updateSession with the field named.
 */
export const GEMINI_CAPABILITIES: Readonly<ProviderCapabilities> = Object.freeze({
  inputTranscription: false,
  outputTranscription: false,
  textOutput: false,
  tools: false,
  semanticVad: false,
  manualTurns: true,
  noiseReduction: false,
  sessionUpdate: true,
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

/**
 * Gemini Live (BidiGenerateContent over WebSocket). Differences the adapter absorbs (docs/providers.md):
 * - input is sent as 16 kHz PCM (resampled from 24 kHz), output arrives as 24 kHz PCM;
 * - turns are detected by Gemini's automatic activity detection (commit / response.create flush the stream with
 *   `audioStreamEnd`), or, with manual turns, framed by `activityStart` / `activityEnd`;
 * - voice, activity detection, modality and transcription are fixed by `setup`: a later change is refused;
 * - there are no response ids: the adapter numbers model turns `gemini_resp_1`, `gemini_resp_2`, …;
 * - there is no cancel: a barge-in stops the audio here and drops the rest of that model turn, and the
 *   response ends when Gemini ends the turn, with the usage Gemini reports for it;
 * - output audio ends at `generationComplete`, the response at `turnComplete` (with its `usageMetadata`).
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
    // A setting the setup cannot express is refused, never dropped (the relay refuses it earlier when it can).
    if (geminiRefusal(config)) throw new UpstreamError(this.name, 'rejected');
    const ws = await openUpstreamSocket({ provider: this.name, url: this.url, headers: { 'x-goog-api-key': this.apiKey }, signal });
    const connection = new GeminiLiveConnection(this.name, ws, onEvent, config);
    await connection.configure(signal);
    return connection;
  }
}

/** One model turn: a response from its first output to Gemini's `turnComplete`. */
interface Turn {
  responseId: string;
  /** Stopped by a barge-in (ours or Gemini's `interrupted`): the rest of its output is dropped. */
  cancelled: boolean;
  /** Output audio ended (`generationComplete`, or `audio_done` already sent). */
  outputDone: boolean;
  /** The latest usageMetadata of this turn (each report is a snapshot of the turn, not an increment). */
  tokens: TokenReport | null;
}

class GeminiLiveConnection extends WsUpstreamConnection implements UpstreamConnection {
  private readonly resampler = new Resampler24kTo16k();
  private inputBytes = 0;
  /** Audio went up since the last audioStreamEnd (automatic activity detection). */
  private streamOpen = false;
  /** Manual turns: an activityStart was sent and its activityEnd not yet. */
  private activityOpen = false;
  private responseSeq = 0;
  private turn: Turn | null = null;
  /** A turn Gemini completed whose usageMetadata may still follow (for up to USAGE_GRACE_MS). */
  private pendingDone: { turn: Turn; timer: NodeJS.Timeout } | null = null;
  /** A usage report arriving now belongs to a turn already settled without it; it must not leak into the next. */
  private staleUsage = false;

  constructor(
    provider: string,
    ws: WebSocket,
    onEvent: (event: UpstreamEvent) => void,
    /** The settings the setup fixed (a later update is checked against them). */
    private settings: GeminiSessionConfig,
  ) {
    super(provider, ws, onEvent);
  }

  private get manualTurns(): boolean {
    return this.settings.turnDetection === null;
  }

  configure(signal: AbortSignal): Promise<void> {
    return this.awaitSetup(geminiSetup(this.settings), signal);
  }

  appendAudio(pcm: Buffer): void {
    if (this.phase !== 'open') return;
    this.inputBytes += pcm.length;
    const resampled = this.resampler.push(pcm);
    if (resampled.length === 0) return;
    if (this.manualTurns && !this.activityOpen) {
      this.activityOpen = true;
      this.sendFrame({ realtimeInput: { activityStart: {} } });
    }
    this.streamOpen = true;
    this.sendFrame({ realtimeInput: { audio: { data: resampled.toString('base64'), mimeType: INPUT_MIME } } });
  }

  commit(): void {
    this.endInput();
  }

  clear(): void {
    // Gemini consumes input as it streams: there is no buffer left to clear.
  }

  createResponse(): void {
    this.endInput();
  }

  cancelResponse(_responseId: string | null, _playedMs: number): void {
    // Gemini has no cancel: its turn goes on (until it hears the user, or completes) and is billed as it
    // reports it. Nothing more of it reaches the client; the response ends at Gemini's turnComplete.
    const turn = this.turn ?? this.pendingDone?.turn;
    if (turn) turn.cancelled = true;
  }

  updateSession(update: SessionSettings): void {
    const refusal = geminiUpdateRefusal(this.settings, update);
    // Answered after the caller returns, like every upstream event.
    if (refusal) {
      queueMicrotask(() =>
        this.emit({ type: 'error', message: refusal.message, fatal: false, request: 'update_session', param: refusal.param }),
      );
      return;
    }
    this.settings = { ...this.settings, ...update };
    // Instructions and tools are the only settings Gemini takes after setup. It does not acknowledge a
    // contextUpdate: updates are applied in order with the rest of the input, so it is in effect once sent.
    const { instructions, tools } = update;
    if (instructions !== undefined || tools !== undefined) {
      this.sendFrame({
        contextUpdate: {
          ...(instructions !== undefined ? { systemInstruction: geminiInstruction(instructions) } : {}),
          ...(tools !== undefined ? { tools: { tools: tools.length > 0 ? geminiTools(tools) : [] } } : {}),
        },
      });
    }
    queueMicrotask(() => this.emit({ type: 'session_updated' }));
  }

  // Never called: GEMINI_CAPABILITIES refuses items up front (text turns and tool outputs come next).
  createItem(): void {}
  deleteItem(): void {}
  truncateItem(): void {}

  clearOutputAudio(): void {
    // Output is not buffered upstream: what was sent is the relay's to drop.
  }

  /** The end of the user's input: `activityEnd` with manual turns, else `audioStreamEnd` (flushes Gemini's VAD). */
  private endInput(): void {
    if (this.activityOpen) {
      this.activityOpen = false;
      this.sendFrame({ realtimeInput: { activityEnd: {} } });
      return;
    }
    if (!this.streamOpen || this.manualTurns) return;
    this.streamOpen = false;
    this.sendFrame({ realtimeInput: { audioStreamEnd: true } });
  }

  /** Every frame to Gemini is a LiveClientMessage of the published SDK types. */
  private sendFrame(frame: LiveClientMessage): void {
    this.send(frame as Record<string, unknown>);
  }

  protected onMessage(raw: Record<string, unknown> | null): void {
    if (!raw) return;
    const msg = raw as ServerFrame;
    if (msg.setupComplete !== undefined) {
      this.configured?.resolve();
      return;
    }
    if (this.phase !== 'open') return;
    const content = msg.serverContent && typeof msg.serverContent === 'object' ? msg.serverContent : null;
    if (content) this.onContent(content);
    // A turn Gemini completes without any output (the model chose silence) is still a response: its prompt
    // was processed and is billed as reported.
    if (content?.turnComplete === true) this.openTurn();
    // Usage after the content: a report riding on the message that completes the turn belongs to that turn.
    const tokens = msg.usageMetadata !== undefined ? geminiTokenReport(msg.usageMetadata) : null;
    if (tokens) this.onUsage(tokens);
    if (content?.turnComplete === true) this.completeTurn();
    if (msg.goAway !== undefined) this.onGoAway();
  }

  private onContent(content: LiveServerContent): void {
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
      if (this.turn) this.turn.cancelled = true;
    }
    if (content.generationComplete === true && this.turn) this.endOutput(this.turn);
  }

  private onAudio(pcm: Buffer): void {
    const turn = this.openTurn();
    if (turn.cancelled || turn.outputDone) return;
    this.emit({ type: 'audio_delta', responseId: turn.responseId, pcm });
  }

  /** The current model turn, started (response_created) on its first output. */
  private openTurn(): Turn {
    if (this.turn) return this.turn;
    this.flushPendingDone();
    this.staleUsage = false;
    this.turn = { responseId: `gemini_resp_${++this.responseSeq}`, cancelled: false, outputDone: false, tokens: null };
    this.emit({ type: 'response_created', responseId: this.turn.responseId });
    return this.turn;
  }

  private endOutput(turn: Turn): void {
    if (turn.outputDone) return;
    turn.outputDone = true;
    if (!turn.cancelled) this.emit({ type: 'audio_done', responseId: turn.responseId });
  }

  private onUsage(tokens: TokenReport): void {
    if (this.turn) {
      this.turn.tokens = tokens;
      return;
    }
    const pending = this.pendingDone;
    if (pending) {
      pending.turn.tokens = tokens;
      this.flushPendingDone();
    }
    // Otherwise it belongs to a turn settled without it (after the grace): it must not leak into the next.
  }

  /** Gemini ended the model turn (opened by onMessage if it had no output). */
  private completeTurn(): void {
    const turn = this.openTurn();
    this.turn = null;
    this.endOutput(turn);
    if (turn.tokens) return this.finish(turn);
    const timer = setTimeout(() => this.flushPendingDone(), USAGE_GRACE_MS);
    timer.unref();
    this.pendingDone = { turn, timer };
  }

  /** Reports a completed turn, with its usage when it came: without one, the base applies the token ratio. */
  private flushPendingDone(): void {
    const pending = this.pendingDone;
    if (!pending) return;
    this.pendingDone = null;
    clearTimeout(pending.timer);
    this.staleUsage = pending.turn.tokens === null;
    this.finish(pending.turn);
  }

  private finish(turn: Turn): void {
    const status: ResponseStatus = turn.cancelled ? 'cancelled' : 'completed';
    this.emit({ type: 'response_done', responseId: turn.responseId, status, tokens: turn.tokens });
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

/** A server message as it travels: the SDK's LiveServerMessage without its convenience getters. */
type ServerFrame = Omit<LiveServerMessage, 'text' | 'data'>;

/** A part's inline 24 kHz PCM audio, decoded; null for anything else (text, other rates). */
function outputAudio(part: Part): Buffer | null {
  const inline = part?.inlineData;
  if (!inline || typeof inline.data !== 'string' || typeof inline.mimeType !== 'string') return null;
  const mime = inline.mimeType.toLowerCase();
  if (!mime.startsWith('audio/pcm')) return null;
  const rate = /rate=(\d+)/.exec(mime)?.[1];
  if (rate !== undefined && rate !== '24000') return null;
  const pcm = Buffer.from(inline.data, 'base64');
  return pcm.length > 0 ? pcm : null;
}

/** A session closed before setupComplete: credentials, a refused request, or an outage. */
function setupRefusal(code: number, reason: string): UpstreamErrorKind {
  if (/api key|api_key|permission|unauthenticated|credential/i.test(reason)) return 'unauthorized';
  if (code === 1007 || code === 1008 || code === 1003 || (code >= 4000 && code < 5000)) return 'rejected';
  return 'unavailable';
}
