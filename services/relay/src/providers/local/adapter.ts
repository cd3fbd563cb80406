import { LOCAL_TOKEN_RATIO } from '@s2s/local-provider';
import { OPENAI_CAPABILITIES, OpenAIRealtimeAdapter } from '../openai/adapter.js';
import type { ProviderCapabilities } from '../shared/types.js';

/**
 * The simulator as the `local` provider offers it: a model without reasoning or stored prompts (they are
 * refused, naming the param), one function call per response, the whole context every time (it never
 * truncates) and no extra output fields. The simulator itself honours `reasoning` when it is sent one (the
 * `openai` adapter pointed at it, in tests): packages/local-provider/README.md.
 */
export const LOCAL_CAPABILITIES: Readonly<ProviderCapabilities> = Object.freeze({
  ...OPENAI_CAPABILITIES,
  sessionFields: { reasoning: false, prompt: false, parallelToolCalls: false, truncation: 'disabled' as const, include: 'none' as const },
});

/**
 * Provider `local`: the deterministic simulator of @s2s/local-provider. It speaks the OpenAI Realtime (GA)
 * protocol, so this is the openai adapter pointed at the simulator: the same code path runs for real in
 * development, tests and benchmarks. Its usage reports follow LOCAL_TOKEN_RATIO, also the fallback here.
 */
export class LocalAdapter extends OpenAIRealtimeAdapter {
  override readonly supports = LOCAL_CAPABILITIES;

  constructor(opts: { url: string; apiKey?: string | null }) {
    super({ name: 'local', url: opts.url, apiKey: opts.apiKey ?? null, tokenRatio: { ...LOCAL_TOKEN_RATIO }, propagateTrace: true });
  }
}
