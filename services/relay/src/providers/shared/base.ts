import { backoffMs, BYTES_PER_MS, sleep } from '@s2s/core';
import type { Logger } from '@s2s/telemetry';
import type { TokenReport } from '../../agent/types.js';
import { DEFAULT_CONTINUITY, type ContinuityPolicy } from './continuity.js';
import { UpstreamError, isUpstreamError } from './errors.js';
import { connectionFormats, UpstreamSession } from './upstream-session.js';
import type {
  MeteredUpstream,
  ProviderAdapter,
  ReplayContext,
  UpstreamConnection,
  UpstreamEvent,
  UpstreamSessionConfig,
  UpstreamTokenUsage,
} from './types.js';
import { UsageMeter } from '../../metering/usage-meter.js';

export { UsageMeter };

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
  /** Backoff before retry n is backoffMs · 2^(n-1), jittered (@s2s/core backoffMs; default 100 ms). */
  backoffMs?: number;
  logger?: Logger;
  /** Moving sessions to new connections (adapters that replay history); false: never. Default DEFAULT_CONTINUITY. */
  continuity?: Partial<ContinuityPolicy> | false;
}

export type OpenOptions = Pick<ProviderBaseOptions, 'connectTimeoutMs' | 'retries'> & {
  /** Called before each new connection attempt after a failed one and each attempt of a move, with the route's provider (the relay counts upstream reconnects). */
  onRetry?: (provider?: string) => void;
  /** Called when the session moved to a failover route, with its provider. */
  onRoute?: (provider: string) => void;
  /**
   * The session's settings and conversation now: with it (and an adapter that replays history) the
   * connection outlives its upstream connections (docs/providers.md, "Continuity").
   */
  context?: () => ReplayContext;
  /** Failover routes, in order: another provider's ProviderBase (one that replays history) and its model. */
  fallbacks?: { base: ProviderBase; providerModel: string }[];
  /** Trace context headers every connection of the session (moves too) is opened with (`UpstreamAdapter.connect`). */
  trace?: Readonly<Record<string, string>>;
};

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
  private readonly continuity: ContinuityPolicy | null;

  constructor(
    readonly adapter: ProviderAdapter,
    opts: ProviderBaseOptions = {},
  ) {
    this.name = adapter.name;
    this.connectTimeoutMs = opts.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS;
    this.retries = opts.retries ?? DEFAULT_CONNECT_RETRIES;
    this.backoffMs = opts.backoffMs ?? DEFAULT_RETRY_BACKOFF_MS;
    this.logger = opts.logger;
    this.continuity = opts.continuity === false ? null : { ...DEFAULT_CONTINUITY, ...opts.continuity };
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
    // The connection speaks the client's audio formats where the provider takes them: carried as is.
    const formats = connectionFormats(this.adapter.supports.audioFormats, config.formats);
    config = { ...config, formats };
    const timeoutMs = opts.connectTimeoutMs ?? this.connectTimeoutMs;
    const retries = opts.retries ?? this.retries;
    const deadline = Date.now() + timeoutMs;
    const context = opts.context;
    const metered: UpstreamSession = new UpstreamSession(
      this.name,
      new UsageMeter(this.adapter.tokenRatio, { provider: this.name, provider_model: config.providerModel }),
      onEvent,
      this.logger,
      context && this.continuity && this.adapter.replaysHistory
        ? {
            policy: this.continuity,
            context,
            routes: [{ base: this as ProviderBase, providerModel: config.providerModel }, ...(opts.fallbacks ?? [])]
              .filter((r) => r.base.adapter.replaysHistory)
              .map(({ base, providerModel }) => ({
                provider: base.name,
                providerModel,
                audioFormats: base.adapter.supports.audioFormats,
                reopen: (next: UpstreamSessionConfig, abort: AbortSignal) =>
                  base.attempt(next, metered, abort, base.connectTimeoutMs, opts.trace),
              })),
            ...(opts.onRetry ? { onReconnect: opts.onRetry } : {}),
            ...(opts.onRoute ? { onRoute: opts.onRoute } : {}),
          }
        : null,
    );
    for (let attempt = 0; ; attempt++) {
      if (signal.aborted) throw new UpstreamError(this.name, 'aborted');
      const remaining = deadline - Date.now();
      if (remaining <= 0) throw new UpstreamError(this.name, 'timeout');
      const outcome = await this.attempt(config, metered, signal, remaining, opts.trace);
      if (outcome.connection) {
        metered.attach(outcome.connection, formats);
        return metered;
      }
      const err = outcome.error;
      if (err.permanent || err.kind === 'timeout' || attempt >= retries) throw err;
      this.logger?.warn(
        { provider: this.name, attempt: attempt + 1, kind: err.kind, status: err.status, network_code: err.networkCode },
        'upstream connect failed, retrying',
      );
      opts.onRetry?.();
      const left = deadline - Date.now();
      // The deadline passing during the backoff ends it with the failure that caused the wait.
      if (left <= 0 || !(await sleep(backoffMs(attempt + 1, this.backoffMs, left), { signal })))
        throw signal.aborted ? new UpstreamError(this.name, 'aborted') : err;
    }
  }

  private async attempt(
    config: UpstreamSessionConfig,
    metered: UpstreamSession,
    signal: AbortSignal,
    budgetMs: number,
    trace: Readonly<Record<string, string>> | undefined,
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
    const connecting = this.adapter.connect(config, (event) => metered.handle(event, generation), controller.signal, trace);
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
