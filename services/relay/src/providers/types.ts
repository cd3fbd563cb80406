import type { Usage } from '@s2s/core';

/**
 * The provider adapter interface. An adapter implements only its upstream protocol; ProviderBase (base.ts)
 * owns the connect timeout, connection retries and metering. Audio crossing this interface is always
 * raw PCM16LE, 24 kHz, mono, as Buffers: an adapter resamples or re-encodes on its side of the line.
 */

/** Token counts of one response as the provider reported them (or as the adapter's ratio derived them). */
export interface UpstreamTokenUsage {
  input_audio_tokens: number;
  output_audio_tokens: number;
}

export type ResponseStatus = 'completed' | 'cancelled' | 'failed' | 'incomplete';

/** Normalized upstream events; nothing provider-specific (names, URLs, headers) crosses this line. */
export type UpstreamEvent =
  | { type: 'speech_started'; audioStartMs: number }
  | { type: 'speech_stopped'; audioEndMs: number }
  | { type: 'response_created'; responseId: string }
  | { type: 'audio_delta'; responseId: string; pcm: Buffer }
  | { type: 'audio_done'; responseId: string }
  | {
      type: 'response_done';
      responseId: string;
      status: ResponseStatus;
      /** As the provider reported it; null when it reported none. */
      usage: UpstreamTokenUsage | null;
      /** Filled by ProviderBase: this response's server-measured usage (input since the previous response). */
      metered?: Usage;
    }
  /** fatal: the upstream session cannot continue (the relay fails the session if reconnecting fails too). */
  | { type: 'error'; message: string; fatal: boolean }
  | { type: 'closed'; unexpected: boolean };

export interface UpstreamSessionConfig {
  /** The catalog model's provider_model. */
  providerModel: string;
  /** Any non-empty name up to 64 characters; an adapter maps one it does not know to its default. */
  voice?: string;
  turnDetection?: { type: 'server_vad'; silenceDurationMs?: number };
}

export interface UpstreamConnection {
  appendAudio(pcm: Buffer): void;
  commit(): void;
  clear(): void;
  createResponse(): void;
  /** Barge-in: stop the current response; `playedMs` is how much of its audio the client received. */
  cancelResponse(responseId: string | null, playedMs: number): void;
  updateSession(config: Partial<UpstreamSessionConfig>): void;
  close(): Promise<void>;
}

/**
 * What ProviderBase.open() returns: the adapter's connection wrapped with metering. `usage()` is cumulative
 * for this upstream connection: accepted input bytes and provider-produced output bytes (48 bytes = 1 ms),
 * tokens from the provider's reports, or from the adapter's tokenRatio when the provider reports none.
 */
export interface MeteredUpstream extends UpstreamConnection {
  usage(): Usage;
}

export interface ProviderAdapter {
  /** Catalog provider name, e.g. `local`, `openai`, `gemini`. */
  readonly name: string;
  /** Ratio used when the provider reports no token counts (documented per adapter). */
  readonly tokenRatio: { inputMsPerToken: number; outputMsPerToken: number };
  /** Opens one upstream session. Rejects on failure; ProviderBase retries and times it out. */
  connect(config: UpstreamSessionConfig, onEvent: (event: UpstreamEvent) => void, signal: AbortSignal): Promise<UpstreamConnection>;
}
