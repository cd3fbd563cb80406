import { OpenAIRealtimeAdapter } from '../openai/adapter.js';

/** Azure OpenAI's GA realtime path on a resource endpoint (`https://<resource>.openai.azure.com`). */
export const AZURE_REALTIME_PATH = '/openai/v1/realtime';

/**
 * Provider `azure`: Azure OpenAI's GA realtime endpoint, `wss://<resource>.openai.azure.com/openai/v1/realtime
 * ?model=<deployment>` with the key in an `api-key` header. The protocol is OpenAI's (GA): only the URL and
 * the auth differ, so this is the openai adapter with both set (continuity and usage included).
 */
export class AzureOpenAIAdapter extends OpenAIRealtimeAdapter {
  constructor(opts: { endpoint: string; apiKey: string }) {
    super({ name: 'azure', url: azureRealtimeUrl(opts.endpoint), apiKey: opts.apiKey, apiKeyHeader: 'api-key' });
  }
}

/** The resource endpoint (https, or ws/wss) → its realtime WebSocket URL; the deployment is the `model` query. */
export function azureRealtimeUrl(endpoint: string): string {
  const url = new URL(AZURE_REALTIME_PATH, endpoint);
  if (url.protocol === 'https:') url.protocol = 'wss:';
  else if (url.protocol === 'http:') url.protocol = 'ws:';
  return url.toString();
}
