import { addUsage, BYTES_PER_MS, ZERO_USAGE, type Usage } from '@s2s/core';
import { ZERO_TOKENS, type TokenReport } from '../agent-model.js';
import type { ProviderAdapter } from './types.js';

type TokenRatio = ProviderAdapter['tokenRatio'];

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
