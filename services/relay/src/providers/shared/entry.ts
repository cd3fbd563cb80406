import type { z } from '@s2s/core';
import type { ProviderAdapter } from './types.js';

/**
 * One provider as the registry (providers/index.ts) knows it: its name in the catalog, the environment
 * variables it reads (config.ts takes them in, each with its comment), and its adapter when they configure
 * it (null: this relay does not offer the provider).
 */
export interface ProviderEntry<S extends z.ZodRawShape> {
  readonly name: string;
  readonly env: S;
  adapter(env: z.output<z.ZodObject<S>>): ProviderAdapter | null;
}

/** Types an entry by its variables. */
export function defineProvider<S extends z.ZodRawShape>(entry: ProviderEntry<S>): ProviderEntry<S> {
  return entry;
}
