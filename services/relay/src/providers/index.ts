import type { z } from '@s2s/core';
import { azureProvider } from './azure/provider.js';
import { geminiProvider } from './gemini/provider.js';
import { localProvider } from './local/provider.js';
import { openaiProvider } from './openai/provider.js';
import { ProviderBase, type ProviderBaseOptions } from './shared/base.js';
import type { ProviderAdapter } from './shared/types.js';

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

/** Every provider the relay knows, in the order it offers them: a new provider is its folder and a line here. */
export const PROVIDERS = [localProvider, openaiProvider, azureProvider, geminiProvider] as const;

type Intersection<U> = (U extends unknown ? (x: U) => void : never) extends (x: infer I) => void ? I : never;
type ProviderShape = Intersection<(typeof PROVIDERS)[number]['env']>;

/** The environment variables of every provider, for config.ts. */
export const PROVIDER_ENV = Object.assign({}, ...PROVIDERS.map((p) => p.env)) as ProviderShape;

/** The providers' variables as parsed. */
export type ProviderEnv = z.output<z.ZodObject<ProviderShape>>;

export interface ProviderRegistryOptions {
  connectTimeoutMs?: number;
  retries?: number;
  /** Moving sessions to new upstream connections (openai, azure, local); see ContinuityPolicy. */
  continuity?: ProviderBaseOptions['continuity'];
  /** Backoff base between connection attempts (ms). */
  backoffMs?: number;
  logger?: ProviderBaseOptions['logger'];
}

export interface ProviderRegistry {
  /** The provider a catalog model names, or undefined when this relay has no such provider configured. */
  get(providerName: string): ProviderBase | undefined;
}

/** One ProviderBase per provider the environment configures (`local` always). */
export function createProviderRegistry(env: ProviderEnv, opts: ProviderRegistryOptions = {}): ProviderRegistry {
  const providers = new Map<string, ProviderBase>();
  for (const p of PROVIDERS) {
    const adapter = (p.adapter as (env: ProviderEnv) => ProviderAdapter | null)(env);
    if (adapter) providers.set(p.name, new ProviderBase(adapter, opts));
  }
  return {
    get: (name) => providers.get(name),
  };
}
