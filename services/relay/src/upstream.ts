import type { MeteredUpstream, UpstreamEvent, UpstreamSessionConfig } from './providers/types.js';

/**
 * What the relay needs of the providers: open a metered upstream session for a catalog provider name.
 * main.ts adapts the provider registry to it; tests may hand in their own.
 */
export interface UpstreamOpener {
  /** Rejects when the provider is unknown or unreachable; `signal` abandons an opening still under way. */
  open(
    provider: string,
    config: UpstreamSessionConfig,
    onEvent: (event: UpstreamEvent) => void,
    signal: AbortSignal,
    hooks?: { onRetry?: () => void },
  ): Promise<MeteredUpstream>;
}
