import type { CheckpointRoute, ModelRoute } from '@s2s/contract';
import { addUsage, BYTES_PER_MS, USAGE_COUNTERS, usageByRoute, ZERO_USAGE, type Usage } from '@s2s/core';
import { ZERO_TOKENS, type TokenReport } from '../agent/types.js';
import type { ProviderAdapter, UsageReading } from '../providers/shared/types.js';

type TokenRatio = ProviderAdapter['tokenRatio'];

/**
 * Server-side metering of one upstream session (decisions.md: 48 bytes = 1 ms). Byte totals are kept
 * exact and converted with floor only when read, and each response's `metered` is the difference of two
 * such readings, so per-response figures always add up to the cumulative ones. Usage is attributed to the
 * route serving at the time (docs/providers.md, "Failover routes"): each route's part is the difference of
 * two cumulative readings too, so the parts add up to the totals exactly.
 */
export class UsageMeter implements UsageReading {
  /** The parts of the routes that served before the current one. */
  private earlier: CheckpointRoute[] = [];
  /** Cumulative usage when the current route began serving. */
  private routeStart: Usage = ZERO_USAGE;
  private inBytes = 0;
  private outBytes = 0;
  /** The token counters (and transcribed_ms) of every response closed so far. */
  private reported: Usage = ZERO_USAGE;
  /** Cumulative ms at the previous response_done (or settlement). */
  private inMsMark = 0;
  private outMsMark = 0;
  private responseOpen = false;
  /** usage() kept up to date in place (usageNow), so reading it per frame makes nothing. */
  private readonly live: Usage = { ...ZERO_USAGE };

  constructor(
    private readonly ratio: TokenRatio,
    private route: ModelRoute,
  ) {}

  /** From now on `route` serves: what is measured next is its part. */
  useRoute(route: ModelRoute): void {
    this.earlier.push(this.currentPart());
    this.routeStart = this.usage();
    this.route = route;
  }

  /** Cumulative, split by route (each route once, in the order it first served); the parts sum to usage(). */
  routes(): CheckpointRoute[] {
    const parts = [...this.earlier, this.currentPart()];
    return parts.length === 1 ? parts : (usageByRoute([parts]) as CheckpointRoute[]);
  }

  private currentPart(): CheckpointRoute {
    const now = this.usage();
    const part: CheckpointRoute = { provider: this.route.provider, provider_model: this.route.provider_model, ...now };
    for (const k of USAGE_COUNTERS) part[k] = now[k] - this.routeStart[k];
    return part;
  }

  addInput(bytes: number): void {
    this.inBytes += bytes;
    this.live.audio_in_ms = Math.floor(this.inBytes / BYTES_PER_MS);
  }

  addOutput(bytes: number): void {
    this.outBytes += bytes;
    this.live.audio_out_ms = Math.floor(this.outBytes / BYTES_PER_MS);
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
    for (const k of USAGE_COUNTERS) if (k !== 'audio_in_ms' && k !== 'audio_out_ms') this.live[k] = this.reported[k];
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
    return { ...this.live };
  }

  /** usage() as a view updated in place: for a reader that reads it at once and keeps nothing of it. */
  usageNow(): Readonly<Usage> {
    return this.live;
  }

  private estimate(inMs: number, outMs: number): TokenReport {
    return {
      ...ZERO_TOKENS,
      inputAudioTokens: Math.ceil(inMs / this.ratio.inputMsPerToken),
      outputAudioTokens: Math.ceil(outMs / this.ratio.outputMsPerToken),
    };
  }
}
