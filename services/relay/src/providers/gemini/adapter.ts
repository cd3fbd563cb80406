import type { FunctionCall, FunctionResponse, LiveClientMessage, LiveServerContent, LiveServerMessage, Part } from '@google/genai';
import { bytesOf, DOWN_24K_TO_16K, Resampler, samplesOf } from '@s2s/audio';
import { BYTES_PER_MS, randomBase62 } from '@s2s/core';
import { ZERO_TOKENS, type ContentPart, type ItemBody, type NewItem, type VoiceSettings, type TokenReport } from '../../agent/types.js';
import { Audio } from '../../audio.js';
import { UpstreamError, type UpstreamErrorKind } from '../shared/errors.js';
import { geminiInstruction, geminiRefusal, geminiSetup, geminiTools, geminiUpdateRefusal, type GeminiSessionConfig } from './setup.js';
import { geminiTokenReport } from './usage.js';
import type {
  OutputRef,
  ProviderAdapter,
  ProviderCapabilities,
  ResponseStatus,
  UpstreamConnection,
  UpstreamEvent,
  UpstreamSessionConfig,
} from '../shared/types.js';
import { openUpstreamSocket, WsUpstreamConnection, type WebSocket } from '../shared/ws-upstream.js';

export { GEMINI_DEFAULT_VOICE, geminiVoice } from './setup.js';

export const GEMINI_LIVE_URL =
  'wss://generativelanguage.googleapis.com/ws/google.ai.generativelanguage.v1beta.GenerativeService.BidiGenerateContent';
/** Gemini counts audio at 32 tokens per second in both directions: the fallback when no usage is reported. */
export const GEMINI_TOKEN_RATIO = Object.freeze({ inputMsPerToken: 1000 / 32, outputMsPerToken: 1000 / 32 });

const INPUT_MIME = 'audio/pcm;rate=16000';
/** After turnComplete (or a tool call), how long to wait for a usageMetadata message that may follow it. */
const USAGE_GRACE_MS = 300;
/** Resumption after a goAway or a lost connection: attempts, backoff base, and the wait for setupComplete. */
const RESUME_ATTEMPTS = 3;
const RESUME_BACKOFF_MS = 100;
const RESUME_SETUP_TIMEOUT_MS = 5000;
/** A planned switch happens this long before goAway's deadline at the latest (an answer in flight is cut). */
const SWITCH_MARGIN_MS = 1000;
/** Frames kept since the latest resumption handle (about 2 minutes of input audio); beyond, a resumption loses them. */
const MAX_REPLAY_BYTES = 4 * 1024 * 1024;
/** Tool calls remembered for their outputs (a session's calls rarely go beyond a few). */
const MAX_TRACKED_CALLS = 256;

/**
 * What Gemini Live can do beyond audio (the relay refuses the rest up front). Items cannot be deleted or
 * truncated (Gemini keeps its own history), there are no per-response options, and setup fixes voice, turn
 * detection, modality and transcription: a later change to those is refused by updateSession, the field named.
 */
export const GEMINI_CAPABILITIES: Readonly<ProviderCapabilities> = Object.freeze({
  inputTranscription: true,
  outputTranscription: true,
  textOutput: true,
  tools: true,
  semanticVad: false,
  manualTurns: true,
  noiseReduction: false,
  sessionUpdate: true,
  voiceChangeAfterAudio: false,
  // PCM16 16 kHz in and 24 kHz out on the wire: the adapter resamples the input from 24 kHz.
  audioFormats: ['pcm16'] as const,
  textInput: true,
  // Conversation history other than user text and tool results is not sent mid-session: Gemini keeps its own.
  audioItems: false,
  systemAndAssistantItems: false,
  itemDelete: false,
  itemTruncate: false,
  responseOptions: false,
  // No reasoning or stored prompts here; Gemini may call several functions at once, keeps the whole context
  // (no truncation) and has no extra output fields.
  sessionFields: { reasoning: false, prompt: false, parallelToolCalls: true, truncation: 'disabled' as const, include: 'none' as const },
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
 * - output audio ends at `generationComplete`, the response at `turnComplete` (with its `usageMetadata`);
 * - a model turn's output is one assistant message item (audio with its transcript, or text), and one
 *   function_call item per function call; a tool call ends the response (Gemini waits for the tool response);
 * - user audio becomes an item when the model starts answering it (or at commit), with its transcript;
 * - client text turns and tool outputs go up as `clientContent` / `toolResponse` when a response is asked for.
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
    const open = (signal: AbortSignal) =>
      openUpstreamSocket({ provider: this.name, url: this.url, headers: { 'x-goog-api-key': this.apiKey }, signal });
    const ws = await open(signal);
    const connection = new GeminiLiveConnection(this.name, ws, onEvent, config, open);
    await connection.configure(signal);
    return connection;
  }
}

/** The assistant message of a model turn: its audio with the transcript, or its text. */
interface OutputMessage {
  ref: OutputRef;
  kind: 'output_audio' | 'output_text';
  /** The transcript (audio) or the text, so far. */
  text: string;
}

/** One model turn: a response from its first output to Gemini's `turnComplete` (or its tool call). */
interface Turn {
  responseId: string;
  /** Stopped by a barge-in (ours or Gemini's `interrupted`): the rest of its output is dropped. */
  cancelled: boolean;
  /** Output audio ended (`generationComplete`, or the turn's end). */
  outputDone: boolean;
  /** The latest usageMetadata of this turn (each report is a snapshot of the turn, not an increment). */
  tokens: TokenReport | null;
  /** Output items so far: the next item's output_index. */
  outputs: number;
  message: OutputMessage | null;
  /** Ended by a tool call: Gemini reports its usage, if at all, with the turn that continues after the tool response. */
  toolCall: boolean;
}

/** A user audio turn: the input appended since the previous one became an item, and its transcript. */
interface UserAudio {
  key: string;
  bytes: number;
  transcript: string;
  /** Gemini marked the transcription finished. */
  finished: boolean;
  committed: boolean;
  done: boolean;
}

class GeminiLiveConnection extends WsUpstreamConnection implements UpstreamConnection {
  private readonly resampler = new Resampler(DOWN_24K_TO_16K);
  private inputBytes = 0;
  /** Audio went up since the last audioStreamEnd (automatic activity detection). */
  private streamOpen = false;
  /** Manual turns: an activityStart was sent and its activityEnd not yet. */
  private activityOpen = false;
  /**
   * The end of the latest input went up (Gemini answers it by itself): a response.create must not ask again,
   * until new input comes.
   */
  private inputEnded = false;
  private responseSeq = 0;
  private itemSeq = 0;
  private turn: Turn | null = null;
  /** A turn Gemini completed whose usageMetadata may still follow (for up to USAGE_GRACE_MS). */
  private pendingDone: { turn: Turn; timer: NodeJS.Timeout } | null = null;
  /** A usage report arriving now belongs to a turn already settled without it; it must not leak into the next. */
  private staleUsage = false;
  /** The last turn ended with a tool call: a `turnComplete` without output that follows belongs to it. */
  private afterToolCall = false;
  /** Gemini signalled the start of the user's speech (voiceActivity) and not yet its end. */
  private speaking = false;
  /** The user audio not yet an item, and the last one that is, while its transcript may still grow. */
  private user: UserAudio | null = null;
  private transcribing: UserAudio | null = null;
  /** Input audio transcribed since the previous response report (added to the next one). */
  private transcribedMs = 0;
  /** The last item of the conversation, in the relay's keys (Gemini only appends). */
  private lastKey: string | null = null;
  /** Our call ids → Gemini's function call (id and name), for the tool response. */
  private readonly calls = new Map<string, { id: string | undefined; name: string }>();
  /** Tool outputs the client gave, sent together when it asks for the response (Gemini answers them at once). */
  private toolOutputs: FunctionResponse[] = [];

  constructor(
    provider: string,
    ws: WebSocket,
    onEvent: (event: UpstreamEvent) => void,
    /** The settings the setup fixed (a later update is checked against them). */
    private settings: GeminiSessionConfig,
    /** Opens another socket to the same endpoint (session resumption). */
    private readonly reopen: (signal: AbortSignal) => Promise<WebSocket>,
  ) {
    super(provider, ws, onEvent);
  }

  // ---- session resumption (docs/providers.md, "Connection lifetime") ----

  /** The latest handle Gemini said the session can be resumed from. */
  private resumeHandle: string | null = null;
  /** Frames held while a resumed connection is being set up; null when none is. */
  private held: LiveClientMessage[] | null = null;
  /** Frames sent since the latest handle: a resumed session has not seen them, so they are sent again. */
  private sinceHandle: string[] = [];
  private sinceHandleBytes = 0;
  /** More was sent since the latest handle than is kept: a resumption would lose it. */
  private sinceHandleOverflow = false;
  /** Since the latest handle, Gemini was asked to answer (end of input, a text turn's end, tool outputs). */
  private sinceHandleAsked = false;
  private resumeAbort: AbortController | null = null;
  /** Waiting for the resumed connection's setupComplete. */
  private resumed: { resolve: () => void; reject: () => void } | null = null;
  /** goAway came: switch at the end of the turn in flight, or at this timer (the deadline's margin). */
  private switchTimer: NodeJS.Timeout | null = null;

  private get manualTurns(): boolean {
    return this.settings.turnDetection === null;
  }

  configure(signal: AbortSignal): Promise<void> {
    return this.awaitSetup(geminiSetup(this.settings), signal);
  }

  override close(): Promise<void> {
    this.resumeAbort?.abort();
    this.resumed?.reject();
    if (this.switchTimer) clearTimeout(this.switchTimer);
    this.switchTimer = null;
    // Closed under a resumption: no socket is left to hear a close from.
    if (this.phase === 'open' && this.ws.readyState === this.ws.CLOSED) {
      this.closingByUs = true;
      this.phase = 'closed';
      return Promise.resolve();
    }
    return super.close();
  }

  /**
   * Gemini ends connections (about every 10 minutes) with a goAway and its `timeLeft`. With a resumption
   * handle, the adapter moves to a new connection resuming the same session at the first quiet moment (no
   * answer in flight, nothing sent since the latest handle), at the latest SWITCH_MARGIN_MS before the
   * deadline. The relay sees nothing.
   */
  private onGoAway(timeLeft: string | undefined): void {
    if (!this.resumeHandle || this.held || this.switchTimer) return; // without a handle, the close ends the session
    const ms = Math.max(0, durationMs(timeLeft) - SWITCH_MARGIN_MS);
    this.switchTimer = setTimeout(() => void this.resume(), ms);
    this.switchTimer.unref();
    this.switchIfQuiet();
  }

  /**
   * A planned switch goes ahead once nothing would be cut or answered twice: no answer in flight, and no input
   * Gemini was asked to answer since the latest handle (its handle follows the answer). Input merely streamed
   * since then (a microphone's) is sent again to the new connection.
   */
  private switchIfQuiet(): void {
    if (this.switchTimer && !this.turn && !this.pendingDone && !this.sinceHandleAsked) queueMicrotask(() => void this.resume());
  }

  /**
   * Opens a new connection resuming the session from the last handle (bounded attempts with backoff). Input
   * meanwhile is held and sent once it is set up; an answer in flight is lost (reported failed, billed by ratio).
   * When no attempt succeeds, the session fails as on any lost upstream.
   */
  private async resume(): Promise<void> {
    if (this.held || this.phase !== 'open' || !this.resumeHandle) return;
    if (this.switchTimer) clearTimeout(this.switchTimer);
    this.switchTimer = null;
    this.held = [];
    this.abandonTurn();
    const abort = new AbortController();
    this.resumeAbort = abort;
    for (let attempt = 0; attempt < RESUME_ATTEMPTS && !abort.signal.aborted; attempt++) {
      if (attempt > 0) await new Promise((resolve) => setTimeout(resolve, RESUME_BACKOFF_MS * 2 ** (attempt - 1)).unref());
      if (abort.signal.aborted) break;
      const ws = await this.reopen(abort.signal).catch(() => null);
      if (!ws) continue;
      if (abort.signal.aborted) {
        ws.terminate();
        break;
      }
      this.replaceSocket(ws);
      const ok = await new Promise<boolean>((resolve) => {
        const timer = setTimeout(() => resolve(false), RESUME_SETUP_TIMEOUT_MS);
        timer.unref();
        this.resumed = {
          resolve: () => (clearTimeout(timer), resolve(true)),
          reject: () => (clearTimeout(timer), resolve(false)),
        };
        ws.send(JSON.stringify(geminiSetup(this.settings, this.resumeHandle ?? undefined)));
      });
      this.resumed = null;
      if (ok) {
        const held = this.held;
        this.held = null;
        this.resumeAbort = null;
        // What the resumed session has not seen: everything since its handle, then what came meanwhile.
        for (const frame of this.sinceHandle) ws.send(frame);
        for (const frame of held) this.sendFrame(frame);
        return;
      }
    }
    this.held = null;
    this.resumeAbort = null;
    if (abort.signal.aborted || this.closingByUs) return;
    this.emit({ type: 'error', message: `provider ${this.provider} could not resume the session`, fatal: true });
    this.emit({ type: 'closed', unexpected: true });
    this.phase = 'closed';
    this.ws.terminate();
  }

  /** The connection under a turn in flight went away: the turn ends failed (its usage will never come). */
  private abandonTurn(): void {
    this.flushPendingDone();
    const turn = this.turn;
    if (!turn) return;
    this.turn = null;
    turn.cancelled = true;
    this.closeMessage(turn);
    this.emit({ type: 'response_done', responseId: turn.responseId, status: 'failed', tokens: null });
  }

  appendAudio(audio: Audio): void {
    if (this.phase !== 'open') return;
    this.inputBytes += audio.bytes;
    this.user ??= this.newUser();
    this.user.bytes += audio.bytes;
    this.inputEnded = false;
    // Gemini takes 16 kHz: this adapter decodes the client's base64 to resample it (whole samples: the relay
    // checks an append's alignment).
    const resampled = this.resampler.push(samplesOf(audio.pcm));
    if (resampled.length === 0) return;
    if (this.manualTurns && !this.activityOpen) {
      this.activityOpen = true;
      this.sendFrame({ realtimeInput: { activityStart: {} } });
    }
    this.streamOpen = true;
    this.sendFrame({ realtimeInput: { audio: { data: bytesOf(resampled).toString('base64'), mimeType: INPUT_MIME } } });
  }

  commit(): void {
    this.commitUser();
    this.endInput();
  }

  clear(): void {
    // Gemini consumes input as it streams: what it heard stays heard. It just does not become an item here.
    if (this.user && !this.user.committed) this.user = null;
  }

  /**
   * Tool outputs given since the last response go up now (Gemini answers them); otherwise the end of the
   * user's input (Gemini answers it), or, with nothing pending, a generation from the context so far.
   */
  createResponse(): void {
    if (this.phase !== 'open') return;
    if (this.toolOutputs.length > 0) {
      const functionResponses = this.toolOutputs;
      this.toolOutputs = [];
      this.inputEnded = true;
      this.sendFrame({ toolResponse: { functionResponses } });
      return;
    }
    if (this.turn) return;
    if (this.streamOpen || this.activityOpen) return this.commit();
    if (this.inputEnded) return;
    this.inputEnded = true;
    this.sendFrame({ clientContent: { turnComplete: true } });
  }

  cancelResponse(_responseId: string | null, _playedMs: number): void {
    // Gemini has no cancel: its turn goes on (until it hears the user, or completes) and is billed as it
    // reports it. Nothing more of it reaches the client; the response ends at Gemini's turnComplete.
    const turn = this.turn ?? this.pendingDone?.turn;
    if (turn) turn.cancelled = true;
  }

  updateSession(update: VoiceSettings): void {
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

  /**
   * A user text turn goes up as `clientContent` (appended to Gemini's history, no answer yet); a tool output
   * waits for response.create. Gemini has no item acknowledgement: the item is in once sent.
   */
  createItem(key: string, item: NewItem, previousKey: string | null): void {
    const refuse = (message: string) => queueMicrotask(() => this.emit({ type: 'error', message, fatal: false, request: 'create_item' }));
    if (previousKey !== null && previousKey !== this.lastKey)
      return refuse('Gemini Live only appends items at the end of the conversation.');
    let body: ItemBody;
    if (item.type === 'function_call_output') {
      const call = this.calls.get(item.callId);
      if (!call) return refuse('Gemini Live has no function call with this call id.');
      this.toolOutputs.push({ ...(call.id !== undefined ? { id: call.id } : {}), name: call.name, response: toolResponse(item.output) });
      body = { type: 'function_call_output', status: 'completed', callId: item.callId, output: item.output };
    } else {
      const texts = item.content.flatMap((p) => (p.type === 'input_text' ? [p.text] : []));
      if (item.role !== 'user' || texts.length !== item.content.length) return refuse('Gemini Live takes user text items only.');
      this.commitUser();
      this.sendFrame({ clientContent: { turns: [{ role: 'user', parts: texts.map((text) => ({ text })) }], turnComplete: false } });
      this.inputEnded = false;
      body = { type: 'message', role: 'user', status: 'completed', content: texts.map((text) => ({ type: 'input_text', text })) };
    }
    const previous = this.lastKey;
    this.lastKey = key;
    queueMicrotask(() => {
      this.emit({ type: 'item_added', itemKey: key, previousKey: previous, item: body });
      this.emit({ type: 'item_done', itemKey: key, item: body });
    });
  }

  // Never called: GEMINI_CAPABILITIES refuses them up front (Gemini keeps its own history).
  deleteItem(): void {}
  truncateItem(): void {}

  clearOutputAudio(): void {
    // Output is not buffered upstream: what was sent is the relay's to drop.
  }

  /** The end of the user's input: `activityEnd` with manual turns, else `audioStreamEnd` (flushes Gemini's VAD). */
  private endInput(): void {
    if (this.activityOpen) {
      this.activityOpen = false;
      this.inputEnded = true;
      this.sendFrame({ realtimeInput: { activityEnd: {} } });
      return;
    }
    if (!this.streamOpen || this.manualTurns) return;
    this.streamOpen = false;
    this.inputEnded = true;
    this.sendFrame({ realtimeInput: { audioStreamEnd: true } });
  }

  /** Every frame to Gemini is a LiveClientMessage of the published SDK types; held while a resumption sets up. */
  private sendFrame(frame: LiveClientMessage): void {
    if (this.held) return void this.held.push(frame);
    const json = JSON.stringify(frame);
    const rt = frame.realtimeInput;
    if (rt?.audioStreamEnd || rt?.activityEnd || frame.clientContent?.turnComplete || frame.toolResponse) this.sinceHandleAsked = true;
    if (this.resumeHandle !== null && !this.sinceHandleOverflow) {
      this.sinceHandleBytes += json.length;
      if (this.sinceHandleBytes > MAX_REPLAY_BYTES) {
        this.sinceHandleOverflow = true;
        this.sinceHandle = [];
      } else this.sinceHandle.push(json);
    }
    if (this.phase === 'open' && this.ws.readyState === this.ws.OPEN) this.ws.send(json);
  }

  protected onMessage(raw: Record<string, unknown> | null): void {
    if (!raw) return;
    const msg = raw as ServerFrame;
    if (msg.setupComplete !== undefined) {
      this.configured?.resolve();
      this.resumed?.resolve();
      return;
    }
    const update = msg.sessionResumptionUpdate;
    if (update?.resumable === true && typeof update.newHandle === 'string' && update.newHandle !== '') {
      this.resumeHandle = update.newHandle;
      // The session as of this handle includes what was sent so far; not so for a handle of a session being
      // resumed, which has not yet been given what it missed.
      if (!this.held) {
        this.sinceHandle = [];
        this.sinceHandleBytes = 0;
        this.sinceHandleOverflow = false;
        this.sinceHandleAsked = false;
        this.switchIfQuiet();
      }
    }
    if (this.phase !== 'open') return;
    const content = msg.serverContent && typeof msg.serverContent === 'object' ? msg.serverContent : null;
    if (content) this.onContent(content);
    if (msg.toolCall && Array.isArray(msg.toolCall.functionCalls)) this.onToolCall(msg.toolCall.functionCalls);
    const activity = msg.voiceActivity?.voiceActivityType;
    if (activity === 'ACTIVITY_START') this.speechStarted(true);
    else if (activity === 'ACTIVITY_END') this.speechStopped();
    const completes = content?.turnComplete === true;
    // A turn completed without any output (the model chose silence) is still a response: its prompt was
    // processed and is billed as reported. After a tool call, a bare turnComplete belongs to that turn.
    if (completes && !this.afterToolCall) this.openTurn();
    // Usage after the content: a report riding on the message that completes the turn belongs to that turn.
    const tokens = msg.usageMetadata !== undefined ? geminiTokenReport(msg.usageMetadata) : null;
    if (tokens) this.onUsage(tokens);
    if (completes) this.completeTurn();
    if (msg.goAway !== undefined) this.onGoAway(msg.goAway.timeLeft);
  }

  private onContent(content: LiveServerContent): void {
    const parts = content.modelTurn?.parts;
    if (Array.isArray(parts)) {
      for (const part of parts) {
        if (!part || typeof part !== 'object' || part.thought === true) continue; // thoughts are billed, never shown
        const audio = outputAudio(part);
        if (audio) this.onAudio(audio);
        else if (typeof part.text === 'string' && part.text.length > 0 && this.textMode) this.onOutputText(part.text, 'output_text');
      }
    }
    const spoken = content.outputTranscription?.text;
    if (typeof spoken === 'string' && spoken.length > 0 && !this.textMode) this.onOutputText(spoken, 'output_audio');
    if (content.inputTranscription) this.onInputTranscript(content.inputTranscription.text, content.inputTranscription.finished === true);
    if (content.interrupted === true) {
      // Gemini stopped its answer because it heard the user: that is the start of speech for the relay.
      this.speechStarted(false);
      if (this.turn) this.turn.cancelled = true;
    }
    if (content.generationComplete === true && this.turn) this.endOutput(this.turn);
  }

  /**
   * The user started speaking: Gemini's voice activity signal, or its interruption of an answer. Once per
   * utterance when Gemini signals activity (an interruption then follows the same start of speech).
   */
  private speechStarted(fromActivity: boolean): void {
    if (this.speaking) return;
    if (fromActivity) this.speaking = true;
    this.emit({ type: 'speech_started', audioStartMs: Math.floor(this.inputBytes / BYTES_PER_MS) });
  }

  /** Gemini's activity detection ended the utterance: it becomes the user's item, as server VAD commits it. */
  private speechStopped(): void {
    this.speaking = false;
    this.emit({ type: 'speech_stopped', audioEndMs: Math.floor(this.inputBytes / BYTES_PER_MS) });
    this.commitUser();
  }

  private get textMode(): boolean {
    return this.settings.outputModalities?.[0] === 'text';
  }

  private onAudio(pcm: Buffer): void {
    const turn = this.openTurn();
    if (turn.cancelled || turn.outputDone) return;
    const m = this.message(turn, 'output_audio');
    this.emit({
      type: 'audio_delta',
      responseId: turn.responseId,
      audio: Audio.ofPcm(pcm),
      itemKey: m.ref.itemKey,
      outputIndex: m.ref.outputIndex,
      contentIndex: 0,
    });
  }

  /** Output text (text mode) or the transcript of the spoken output (audio mode). */
  private onOutputText(text: string, kind: OutputMessage['kind']): void {
    const turn = this.openTurn();
    if (turn.cancelled) return;
    const m = this.message(turn, kind);
    m.text += text;
    const type = kind === 'output_text' ? 'text_delta' : 'audio_transcript_delta';
    this.emit({ type, ...m.ref, contentIndex: 0, delta: text });
  }

  /** The turn's assistant message item, added (with its one content part) on first use. */
  private message(turn: Turn, kind: OutputMessage['kind']): OutputMessage {
    if (turn.message) return turn.message;
    const ref: OutputRef = { responseId: turn.responseId, itemKey: this.newKey(), outputIndex: turn.outputs++ };
    turn.message = { ref, kind, text: '' };
    this.outputItemAdded(ref, { type: 'message', role: 'assistant', status: 'in_progress', content: [] });
    const part: ContentPart = kind === 'output_audio' ? { type: 'output_audio', transcript: '' } : { type: 'output_text', text: '' };
    this.emit({ type: 'content_part_added', ...ref, contentIndex: 0, part });
    return turn.message;
  }

  /** Ends the message item: audio, its transcript or text, the part, the item. */
  private closeMessage(turn: Turn): void {
    const m = turn.message;
    if (!m) return;
    this.endOutput(turn);
    turn.message = null;
    let part: ContentPart;
    if (m.kind === 'output_audio') {
      part = { type: 'output_audio', transcript: m.text };
      this.emit({ type: 'audio_transcript_done', ...m.ref, contentIndex: 0, transcript: m.text });
    } else {
      part = { type: 'output_text', text: m.text };
      this.emit({ type: 'text_done', ...m.ref, contentIndex: 0, text: m.text });
    }
    this.emit({ type: 'content_part_done', ...m.ref, contentIndex: 0, part });
    const status = turn.cancelled ? 'incomplete' : 'completed';
    this.outputItemDone(m.ref, { type: 'message', role: 'assistant', status, content: [part] });
  }

  /** An output item joins the response and the conversation (both events, as OpenAI sends them). */
  private outputItemAdded(ref: OutputRef, item: ItemBody): void {
    const previousKey = this.lastKey;
    this.lastKey = ref.itemKey;
    this.emit({ type: 'output_item_added', ...ref, item });
    this.emit({ type: 'item_added', itemKey: ref.itemKey, previousKey, item });
  }

  private outputItemDone(ref: OutputRef, item: ItemBody): void {
    this.emit({ type: 'output_item_done', ...ref, item });
    this.emit({ type: 'item_done', itemKey: ref.itemKey, item });
  }

  /** Function calls: one function_call item each, under our call ids; the response ends with them. */
  private onToolCall(calls: FunctionCall[]): void {
    const turn = this.openTurn();
    this.closeMessage(turn);
    if (!turn.cancelled) {
      for (const call of calls) {
        const name = typeof call?.name === 'string' ? call.name : '';
        const callId = `call_${randomBase62(20)}`;
        this.calls.set(callId, { id: typeof call?.id === 'string' ? call.id : undefined, name });
        if (this.calls.size > MAX_TRACKED_CALLS) this.calls.delete(this.calls.keys().next().value!);
        const args = JSON.stringify(call?.args ?? {});
        const ref: OutputRef = { responseId: turn.responseId, itemKey: this.newKey(), outputIndex: turn.outputs++ };
        this.outputItemAdded(ref, { type: 'function_call', status: 'in_progress', callId, name, arguments: '' });
        this.emit({ type: 'function_call_arguments_delta', ...ref, callId, delta: args });
        this.emit({ type: 'function_call_arguments_done', ...ref, callId, name, arguments: args });
        this.outputItemDone(ref, { type: 'function_call', status: 'completed', callId, name, arguments: args });
      }
    }
    turn.toolCall = true;
    this.completeTurn();
    this.afterToolCall = true;
  }

  private onInputTranscript(text: string | undefined, finished: boolean): void {
    if (!this.settings.inputTranscription) return;
    const target = this.transcribing ?? (this.user ??= this.newUser());
    if (typeof text === 'string' && text.length > 0) {
      target.transcript += text;
      if (target.committed) this.emit({ type: 'input_transcript_delta', itemKey: target.key, contentIndex: 0, delta: text });
    }
    if (finished) {
      target.finished = true;
      if (target.committed) this.completeTranscript(target);
    }
  }

  private newUser(): UserAudio {
    return { key: this.newKey(), bytes: 0, transcript: '', finished: false, committed: false, done: false };
  }

  private newKey(): string {
    return `gemini_item_${++this.itemSeq}`;
  }

  /** The user's audio becomes an item: at commit, or when the model starts answering it. */
  private commitUser(): void {
    const u = this.user;
    if (!u || (u.bytes === 0 && u.transcript === '')) return;
    if (this.transcribing) this.completeTranscript(this.transcribing);
    this.user = null;
    u.committed = true;
    const previousKey = this.lastKey;
    this.lastKey = u.key;
    this.emit({ type: 'input_committed', itemKey: u.key, previousKey });
    const item: ItemBody = { type: 'message', role: 'user', status: 'completed', content: [{ type: 'input_audio', transcript: null }] };
    this.emit({ type: 'item_added', itemKey: u.key, previousKey, item });
    this.emit({ type: 'item_done', itemKey: u.key, item });
    if (!this.settings.inputTranscription) return;
    if (u.transcript !== '') this.emit({ type: 'input_transcript_delta', itemKey: u.key, contentIndex: 0, delta: u.transcript });
    if (u.finished) this.completeTranscript(u);
    else this.transcribing = u;
  }

  private completeTranscript(u: UserAudio): void {
    if (this.transcribing === u) this.transcribing = null;
    if (u.done || !this.settings.inputTranscription) return;
    u.done = true;
    this.transcribedMs += Math.floor(u.bytes / BYTES_PER_MS);
    this.emit({ type: 'input_transcript_completed', itemKey: u.key, contentIndex: 0, transcript: u.transcript });
  }

  /** The current model turn, started (response_created) on its first output; the user's input it answers becomes an item. */
  private openTurn(): Turn {
    if (this.turn) return this.turn;
    this.flushPendingDone();
    this.staleUsage = false;
    this.afterToolCall = false;
    this.commitUser();
    this.turn = {
      responseId: `gemini_resp_${++this.responseSeq}`,
      cancelled: false,
      outputDone: false,
      tokens: null,
      outputs: 0,
      message: null,
      toolCall: false,
    };
    this.emit({ type: 'response_created', responseId: this.turn.responseId });
    return this.turn;
  }

  private endOutput(turn: Turn): void {
    if (turn.outputDone) return;
    turn.outputDone = true;
    const m = turn.message;
    if (!turn.cancelled && m?.kind === 'output_audio') {
      this.emit({
        type: 'audio_done',
        responseId: turn.responseId,
        itemKey: m.ref.itemKey,
        outputIndex: m.ref.outputIndex,
        contentIndex: 0,
      });
    }
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

  /** Gemini ended the model turn (or it ended with a tool call); its response ends once its usage is known. */
  private completeTurn(): void {
    const turn = this.turn;
    if (!turn) return; // the bare turnComplete after a tool call: its usage, if any, went to the pending turn
    this.turn = null;
    this.closeMessage(turn);
    if (this.transcribing) this.completeTranscript(this.transcribing);
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
    // A planned switch waits for the answer in flight: now it has ended.
    this.switchIfQuiet();
    const status: ResponseStatus = turn.cancelled ? 'cancelled' : 'completed';
    // A turn ended by a tool call reported nothing yet: Gemini's report comes with the turn that continues
    // after the tool response (it covers the whole context again), so no ratio is invented for this one.
    const reported = turn.tokens ?? (turn.toolCall ? ZERO_TOKENS : null);
    const tokens = reported ? { ...reported, transcribedMs: reported.transcribedMs + this.transcribedMs } : null;
    if (tokens) this.transcribedMs = 0;
    this.emit({ type: 'response_done', responseId: turn.responseId, status, tokens });
  }

  protected onClose(code: number, reason: Buffer): void {
    if (this.configured) {
      this.configured.reject(new UpstreamError(this.provider, setupRefusal(code, reason.toString('utf8')), { status: code }));
      return;
    }
    if (this.phase === 'closed') return;
    if (this.resumed) return this.resumed.reject(); // a resumption attempt failed: the next one follows
    if (this.held && !this.closingByUs) return; // the connection being left closed: the resumption goes on
    // A connection lost (or ended after goAway) while the session can be resumed: it goes on on a new one.
    if (!this.closingByUs && this.resumeHandle) return void this.resume();
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

/** A protobuf JSON Duration (`"10s"`, `"0.5s"`) in ms; 0 when absent or malformed. */
function durationMs(value: string | undefined): number {
  const m = typeof value === 'string' ? /^(\d+(?:\.\d+)?)s$/.exec(value) : null;
  return m ? Math.floor(Number(m[1]) * 1000) : 0;
}

/** A tool output for Gemini's `response` object: parsed when it is a JSON object, else under `output`. */
function toolResponse(output: string): Record<string, unknown> {
  try {
    const value: unknown = JSON.parse(output);
    if (value !== null && typeof value === 'object' && !Array.isArray(value)) return value as Record<string, unknown>;
    return { output: value };
  } catch {
    return { output };
  }
}

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
