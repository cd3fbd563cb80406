import { LOCAL_TOKEN_RATIO } from '@s2s/local-provider';
import { OpenAIRealtimeAdapter } from '../openai/adapter.js';

/**
 * Provider `local`: the deterministic simulator of @s2s/local-provider. It speaks the OpenAI Realtime (GA)
 * protocol, so this is the openai adapter pointed at the simulator: the same code path runs for real in
 * development, tests and benchmarks. Its usage reports follow LOCAL_TOKEN_RATIO, also the fallback here.
 */
export class LocalAdapter extends OpenAIRealtimeAdapter {
  constructor(opts: { url: string; apiKey?: string | null }) {
    super({ name: 'local', url: opts.url, apiKey: opts.apiKey ?? null, tokenRatio: { ...LOCAL_TOKEN_RATIO }, propagateTrace: true });
  }
}
