import type {
  MeteredUpstream,
  ProviderCapabilities,
  ReplayContext,
  UpstreamEvent,
  UpstreamSessionConfig,
} from '../providers/shared/types.js';

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
    /** `context`: the session's settings and conversation now, for a move to a new upstream connection. */
    /** `fallbacks`: the model's failover routes, in order (a move that fails on its route goes on to the next). */
    hooks?: {
      onRetry?: (provider?: string) => void;
      /** The session moved to a failover route: its provider. */
      onRoute?: (provider: string) => void;
      context?: () => ReplayContext;
      fallbacks?: { provider: string; providerModel: string }[];
      /** Trace context headers of the connect span, passed to the adapter (never entered as the active context). */
      trace?: Readonly<Record<string, string>>;
    },
  ): Promise<MeteredUpstream>;
  /** What the provider can do beyond audio (nothing, for a provider this relay does not have). */
  capabilities(provider: string): Readonly<ProviderCapabilities>;
}

/** A provider that can do audio and nothing else. */
export const NO_CAPABILITIES: Readonly<ProviderCapabilities> = Object.freeze({
  inputTranscription: false,
  outputTranscription: false,
  textOutput: false,
  tools: false,
  semanticVad: false,
  manualTurns: false,
  noiseReduction: false,
  sessionUpdate: false,
  voiceChangeAfterAudio: false,
  audioFormats: ['pcm16'] as const,
  textInput: false,
  audioItems: false,
  systemAndAssistantItems: false,
  itemDelete: false,
  itemTruncate: false,
  responseOptions: false,
  sessionFields: { reasoning: false, prompt: false, parallelToolCalls: false, truncation: 'disabled' as const, include: 'none' as const },
});
