import type { Logger } from '@s2s/telemetry';
import { continuityOf, type Config } from '../config.js';
import { createProviderRegistry } from '../providers/index.js';
import { NO_CAPABILITIES, type UpstreamOpener } from './opener.js';

/** The configured providers (registry of ProviderBase-wrapped adapters) behind the relay's UpstreamOpener. */
export function createProviderOpener(config: Config, logger: Logger): UpstreamOpener {
  const registry = createProviderRegistry(config, {
    connectTimeoutMs: config.PROVIDER_CONNECT_TIMEOUT_MS,
    continuity: continuityOf(config),
    logger,
  });
  return {
    open(provider, sessionConfig, onEvent, signal, hooks) {
      const base = registry.get(provider);
      // A catalog model routed to a provider this relay has no credentials for: an upstream failure.
      if (!base) return Promise.reject(new Error(`provider ${provider} is not configured on this relay`));
      return base.open(sessionConfig, onEvent, signal, {
        ...(hooks?.onRetry ? { onRetry: hooks.onRetry } : {}),
        ...(hooks?.onRoute ? { onRoute: hooks.onRoute } : {}),
        ...(hooks?.context ? { context: hooks.context } : {}),
        ...(hooks?.trace ? { trace: hooks.trace } : {}),
        // A route to a provider this relay has no credentials for is skipped.
        fallbacks: (hooks?.fallbacks ?? []).flatMap((r) => {
          const fallback = registry.get(r.provider);
          if (!fallback) logger.warn({ provider: r.provider }, 'failover route skipped: provider not configured on this relay');
          return fallback ? [{ base: fallback, providerModel: r.providerModel }] : [];
        }),
      });
    },
    capabilities: (provider) => registry.get(provider)?.adapter.supports ?? NO_CAPABILITIES,
  };
}
