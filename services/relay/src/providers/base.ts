import { addUsage, BYTES_PER_MS, ZERO_USAGE, type Usage } from '@s2s/core';
import type { Logger } from '@s2s/telemetry';
import type { Audio } from '../audio.js';
import { UpstreamError, isUpstreamError } from './errors.js';
import { ZERO_TOKENS, type NewItem, type ResponseOptions, type SessionSettings, type TokenReport } from '../agent-model.js';
import type {
  MeteredUpstream,
  ProviderAdapter,
  UpstreamConnection,
  UpstreamEvent,
  UpstreamSessionConfig,
  UpstreamTokenUsage,
} from './types.js';

/** The audio part of a token report (the shared adapter suite compares it with a fake's expected reply). */
export function audioTokensOf(tokens: TokenReport | null): UpstreamTokenUsage | null {
  return tokens ? { input_audio_tokens: tokens.inputAudioTokens, output_audio_tokens: tokens.outputAudioTokens } : null;
}

export { BYTES_PER_MS };
export const DEFAULT_CONNECT_TIMEOUT_MS = 5000;
export const DEFAULT_CONNECT_RETRIES = 2;
export const DEFAULT_RETRY_BACKOFF_MS = 100;

export interface ProviderBaseOptions {
  /** Bound on the whole of open(), every attempt and backoff included (default 5000 ms). */
  connectTimeoutMs?: number;
  /** Further attempts after a failed one that may succeed on retry (default 2). */
  retries?: number;
  /** Backoff before retry n is backoffMs * 2^(n-1), with jitter (default 100 ms). */
  backoffMs?: number;
  logger?: Logger;
}

export type OpenOptions = Pick<ProviderBaseOptions, 'connectTimeoutMs' | 'retries'> & {
  /** Called before each new connection attempt after a failed one (the relay counts upstream reconnects). */
  onRetry?: () => void;
};

type TokenRatio = ProviderAdapter['tokenRatio'];

/**
 * Owns what every provider shares: the connect timeout, connection retries and metering. Adapters
 * implement only their protocol. Errors are UpstreamErrors whose messages carry no URL, host or key.
 */
export class ProviderBase {
  readonly name: string;
  private readonly connectTimeoutMs: number;
  private readonly retries: number;
  private readonly backoffMs: number;
  private readonly logger: Logger | undefined;

  constructor(
    readonly adapter: ProviderAdapter,
    opts: ProviderBaseOptions = {},
  ) {
    this.name = adapter.name;
    this.connectTimeoutMs = opts.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS;
    this.retries = opts.retries ?? DEFAULT_CONNECT_RETRIES;
    this.backoffMs = opts.backoffMs ?? DEFAULT_RETRY_BACKOFF_MS;
    this.logger = opts.logger;
  }

  /**
   * Opens one metered upstream session. `signal` cancels the opening only (a connection already returned
   * is closed with its close()). Rejects with an UpstreamError: permanent kinds (`unauthorized`,
   * `rejected`, `aborted`) at once, others after the retries, and `timeout` at the connect timeout.
   */
  async open(
    config: UpstreamSessionConfig,
    onEvent: (event: UpstreamEvent) => void,
    signal: AbortSignal,
    opts: OpenOptions = {},
  ): Promise<MeteredUpstream> {
    const timeoutMs = opts.connectTimeoutMs ?? this.connectTimeoutMs;
    const retries = opts.retries ?? this.retries;
    const deadline = Date.now() + timeoutMs;
    const metered = new MeteredConnection(this.name, this.adapter.tokenRatio, onEvent, this.logger);
    for (let attempt = 0; ; attempt++) {
      if (signal.aborted) throw new UpstreamError(this.name, 'aborted');
      const remaining = deadline - Date.now();
      if (remaining <= 0) throw new UpstreamError(this.name, 'timeout');
      const outcome = await this.attempt(config, metered, signal, remaining);
      if (outcome.connection) {
        metered.attach(outcome.connection);
        return metered;
      }
      const err = outcome.error;
      if (err.permanent || err.kind === 'timeout' || attempt >= retries) throw err;
      this.logger?.warn(
        { provider: this.name, attempt: attempt + 1, kind: err.kind, status: err.status, network_code: err.networkCode },
        'upstream connect failed, retrying',
      );
      opts.onRetry?.();
      const backoff = Math.min(this.backoffMs * 2 ** attempt * (0.5 + Math.random() / 2), deadline - Date.now());
      // The deadline passing during the backoff ends it with the failure that caused the wait.
      if (backoff <= 0 || !(await sleep(backoff, signal))) throw signal.aborted ? new UpstreamError(this.name, 'aborted') : err;
    }
  }

  private async attempt(
    config: UpstreamSessionConfig,
    metered: MeteredConnection,
    signal: AbortSignal,
    budgetMs: number,
  ): Promise<{ connection: UpstreamConnection; error?: never } | { connection?: never; error: UpstreamError }> {
    const controller = new AbortController();
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      controller.abort();
    }, budgetMs);
    const onAbort = () => controller.abort();
    signal.addEventListener('abort', onAbort, { once: true });
    const generation = metered.nextGeneration();
    const connecting = this.adapter.connect(config, (event) => metered.handle(event, generation), controller.signal);
    // An adapter that ignores its signal must not hold open() past the deadline; a late success is let go.
    const givenUp = new Promise<never>((_, reject) => {
      controller.signal.addEventListener('abort', () => reject(new UpstreamError(this.name, 'aborted')), { once: true });
    });
    connecting.then(
      (connection) => controller.signal.aborted && void connection.close().catch(() => {}),
      () => {},
    );
    try {
      const connection = await Promise.race([connecting, givenUp]);
      return { connection };
    } catch (err) {
      if (timedOut) return { error: new UpstreamError(this.name, 'timeout') };
      if (signal.aborted) return { error: new UpstreamError(this.name, 'aborted') };
      if (isUpstreamError(err)) return { error: err };
      // An adapter failing in an unforeseen way: logged for us, retried like an outage.
      this.logger?.error({ provider: this.name, err }, 'upstream adapter failed to connect');
      return { error: new UpstreamError(this.name, 'unavailable') };
    } finally {
      clearTimeout(timer);
      signal.removeEventListener('abort', onAbort);
    }
  }
}

/** Resolves true after `ms`, or false as soon as `signal` aborts. */
function sleep(ms: number, signal: AbortSignal): Promise<boolean> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve(false);
    const onAbort = () => {
      clearTimeout(timer);
      resolve(false);
    };
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve(true);
    }, ms);
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

/**
 * Server-side metering of one upstream session (decisions.md: 48 bytes = 1 ms). Byte totals are kept
 * exact and converted with floor only when read, and each response's `metered` is the difference of two
 * such readings, so per-response figures always add up to the cumulative ones.
 */
export class UsageMeter {
  private inBytes = 0;
  private outBytes = 0;
  /** The token counters (and transcribed_ms) of every response closed so far. */
  private reported: Usage = ZERO_USAGE;
  /** Cumulative ms at the previous response_done (or settlement). */
  private inMsMark = 0;
  private outMsMark = 0;
  private responseOpen = false;

  constructor(private readonly ratio: TokenRatio) {}

  addInput(bytes: number): void {
    this.inBytes += bytes;
  }

  addOutput(bytes: number): void {
    this.outBytes += bytes;
  }

  responseCreated(): void {
    this.responseOpen = true;
  }

  /**
   * Closes the books on one response: its audio since the previous one and every counter of the provider's
   * report (decisions.md "Usage and price by modality": none is dropped), or the adapter's audio ratio when
   * it reported none.
   */
  responseDone(tokens: TokenReport | null): Usage {
    this.responseOpen = false;
    const inMs = Math.floor(this.inBytes / BYTES_PER_MS);
    const outMs = Math.floor(this.outBytes / BYTES_PER_MS);
    const audioIn = inMs - this.inMsMark;
    const audioOut = outMs - this.outMsMark;
    this.inMsMark = inMs;
    this.outMsMark = outMs;
    const t = tokens ?? this.estimate(audioIn, audioOut);
    const response: Usage = {
      audio_in_ms: audioIn,
      audio_out_ms: audioOut,
      input_audio_tokens: t.inputAudioTokens,
      input_text_tokens: t.inputTextTokens,
      cached_input_tokens: t.cachedInputTokens,
      output_audio_tokens: t.outputAudioTokens,
      output_text_tokens: t.outputTextTokens,
      transcribed_ms: t.transcribedMs,
    };
    this.reported = addUsage(this.reported, { ...response, audio_in_ms: 0, audio_out_ms: 0 });
    return response;
  }

  /**
   * A response the provider never reported on (the session ended mid-answer) still cost what it produced:
   * it is settled at the adapter's ratio. Returns its usage, or null when no response was under way.
   */
  settleUnreported(): Usage | null {
    const outMs = Math.floor(this.outBytes / BYTES_PER_MS);
    if (!this.responseOpen && outMs === this.outMsMark) return null;
    return this.responseDone(null);
  }

  /** Cumulative: the audio measured so far and the counters of every response closed. */
  usage(): Usage {
    return {
      ...this.reported,
      audio_in_ms: Math.floor(this.inBytes / BYTES_PER_MS),
      audio_out_ms: Math.floor(this.outBytes / BYTES_PER_MS),
    };
  }

  private estimate(inMs: number, outMs: number): TokenReport {
    return {
      ...ZERO_TOKENS,
      inputAudioTokens: Math.ceil(inMs / this.ratio.inputMsPerToken),
      outputAudioTokens: Math.ceil(outMs / this.ratio.outputMsPerToken),
    };
  }
}

/** The adapter's connection with metering in front of it; what open() returns. */
class MeteredConnection implements MeteredUpstream {
  private readonly meter: UsageMeter;
  private connection: UpstreamConnection | null = null;
  private generation = 0;
  private closed = false;
  private lastResponseId = '';

  constructor(
    private readonly provider: string,
    ratio: TokenRatio,
    private readonly onEvent: (event: UpstreamEvent) => void,
    private readonly logger: Logger | undefined,
  ) {
    this.meter = new UsageMeter(ratio);
  }

  /** Each connect attempt gets a number; events of an abandoned attempt are ignored. */
  nextGeneration(): number {
    return ++this.generation;
  }

  attach(connection: UpstreamConnection): void {
    this.connection = connection;
  }

  handle(event: UpstreamEvent, generation: number): void {
    if (generation !== this.generation || this.closed) return;
    switch (event.type) {
      case 'response_created':
        this.lastResponseId = event.responseId;
        this.meter.responseCreated();
        break;
      case 'audio_delta':
        this.lastResponseId = event.responseId;
        this.meter.addOutput(event.audio.bytes);
        break;
      case 'response_done':
        event = { ...event, metered: this.meter.responseDone(event.tokens) };
        break;
      case 'closed':
        if (event.unexpected) {
          // The answer under way is lost: it is still accounted, and reported as failed.
          const unreported = this.meter.settleUnreported();
          if (unreported)
            this.deliver({ type: 'response_done', responseId: this.lastResponseId, status: 'failed', tokens: null, metered: unreported });
        }
        this.closed = true;
        break;
      default:
        break;
    }
    this.deliver(event);
  }

  appendAudio(audio: Audio): void {
    if (this.closed || !this.connection || audio.bytes === 0) return;
    this.meter.addInput(audio.bytes);
    this.connection.appendAudio(audio);
  }

  commit(): void {
    if (!this.closed) this.connection?.commit();
  }

  clear(): void {
    if (!this.closed) this.connection?.clear();
  }

  createResponse(options?: ResponseOptions): void {
    if (!this.closed) this.connection?.createResponse(options);
  }

  cancelResponse(responseId: string | null, playedMs: number): void {
    if (!this.closed) this.connection?.cancelResponse(responseId, playedMs);
  }

  updateSession(settings: SessionSettings): void {
    if (!this.closed) this.connection?.updateSession(settings);
  }

  createItem(key: string, item: NewItem, previousKey: string | null): void {
    if (this.closed || !this.connection) return;
    // Audio parts of a created item are input audio like appended audio: metered the same way.
    if (item.type === 'message') for (const part of item.content) if (part.type === 'input_audio') this.meter.addInput(part.pcm.length);
    this.connection.createItem(key, item, previousKey);
  }

  deleteItem(key: string): void {
    if (!this.closed) this.connection?.deleteItem(key);
  }

  truncateItem(key: string, contentIndex: number, audioEndMs: number): void {
    if (!this.closed) this.connection?.truncateItem(key, contentIndex, audioEndMs);
  }

  clearOutputAudio(): void {
    if (!this.closed) this.connection?.clearOutputAudio();
  }

  /** Closes the upstream; an answer cut short is settled at the adapter's ratio before usage() is read. */
  async close(): Promise<void> {
    if (!this.closed) {
      this.closed = true;
      this.meter.settleUnreported();
    }
    await this.connection?.close();
  }

  usage(): Usage {
    return this.meter.usage();
  }

  private deliver(event: UpstreamEvent): void {
    try {
      this.onEvent(event);
    } catch (err) {
      // A failing handler must not break the upstream socket's dispatch; without a logger it surfaces.
      if (!this.logger)
        queueMicrotask(() => {
          throw err;
        });
      else this.logger.error({ provider: this.provider, err, event_type: event.type }, 'upstream event handler failed');
    }
  }
}
