import type { Logger } from '@s2s/telemetry';
import { ProviderBase, type ProviderBaseOptions } from './shared/base.js';
import { AzureOpenAIAdapter } from './azure/adapter.js';
import { GeminiLiveAdapter } from './gemini/adapter.js';
import { LocalAdapter } from './local/adapter.js';
import { OpenAIRealtimeAdapter } from './openai/adapter.js';

export type * from './shared/types.js';
export { UpstreamError, isUpstreamError, type UpstreamErrorKind } from './shared/errors.js';
export {
  ProviderBase,
  UsageMeter,
  audioTokensOf,
  BYTES_PER_MS,
  DEFAULT_CONNECT_RETRIES,
  DEFAULT_CONNECT_TIMEOUT_MS,
  DEFAULT_RETRY_BACKOFF_MS,
  type OpenOptions,
  type ProviderBaseOptions,
} from './shared/base.js';
export {
  OpenAIRealtimeAdapter,
  OPENAI_CAPABILITIES,
  OPENAI_REALTIME_URL,
  openAIVoice,
  type OpenAIRealtimeOptions,
} from './openai/adapter.js';
export { GEMINI_CAPABILITIES } from './gemini/adapter.js';
export { DEFAULT_CONTINUITY, type ContinuityPolicy } from './shared/continuity.js';
export { LocalAdapter } from './local/adapter.js';
export { AzureOpenAIAdapter, AZURE_REALTIME_PATH, azureRealtimeUrl } from './azure/adapter.js';
export { GeminiLiveAdapter, GEMINI_LIVE_URL, geminiVoice, type GeminiLiveOptions } from './gemini/adapter.js';
export { Resampler24kTo16k, resampledLength } from './gemini/resample.js';

export interface ProviderRegistryConfig {
  /** Base URL of the local simulator, e.g. ws://127.0.0.1:8090/v1/realtime. */
  localUrl: string;
  localApiKey?: string;
  /** The OpenAI Realtime API; absent: provider `openai` is not offered. */
  openai?: { apiKey: string; url?: string };
  /** Azure OpenAI (resource endpoint, key); absent: provider `azure` is not offered. */
  azure?: { endpoint: string; apiKey: string };
  /** Gemini Live; absent: provider `gemini` is not offered. */
  gemini?: { apiKey: string; url?: string };
  connectTimeoutMs?: number;
  retries?: number;
  /** Moving sessions to new upstream connections (openai, azure, local); see ContinuityPolicy. */
  continuity?: ProviderBaseOptions['continuity'];
  /** Backoff base between connection attempts (ms). */
  backoffMs?: number;
  logger?: Logger;
}

export interface ProviderRegistry {
  /** The provider a catalog model names, or undefined when this relay has no such provider configured. */
  get(providerName: string): ProviderBase | undefined;
}

export function createProviderRegistry(config: ProviderRegistryConfig): ProviderRegistry {
  const opts = {
    ...(config.connectTimeoutMs !== undefined ? { connectTimeoutMs: config.connectTimeoutMs } : {}),
    ...(config.retries !== undefined ? { retries: config.retries } : {}),
    ...(config.backoffMs !== undefined ? { backoffMs: config.backoffMs } : {}),
    ...(config.continuity !== undefined ? { continuity: config.continuity } : {}),
    ...(config.logger ? { logger: config.logger } : {}),
  };
  const providers = new Map<string, ProviderBase>();
  providers.set('local', new ProviderBase(new LocalAdapter({ url: config.localUrl, apiKey: config.localApiKey ?? null }), opts));
  if (config.openai) {
    providers.set(
      'openai',
      new ProviderBase(
        new OpenAIRealtimeAdapter({ apiKey: config.openai.apiKey, ...(config.openai.url ? { url: config.openai.url } : {}) }),
        opts,
      ),
    );
  }
  if (config.azure) providers.set('azure', new ProviderBase(new AzureOpenAIAdapter(config.azure), opts));
  if (config.gemini) {
    providers.set(
      'gemini',
      new ProviderBase(
        new GeminiLiveAdapter({ apiKey: config.gemini.apiKey, ...(config.gemini.url ? { url: config.gemini.url } : {}) }),
        opts,
      ),
    );
  }
  return {
    get: (name) => providers.get(name),
  };
}
