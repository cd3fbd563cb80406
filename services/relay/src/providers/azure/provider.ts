import { z } from '@s2s/core';
import { optionalSecret } from '../../env-fields.js';
import { defineProvider } from '../shared/entry.js';
import { AzureOpenAIAdapter } from './adapter.js';

/** Offered when both its endpoint and its key are set. */
export const azureProvider = defineProvider({
  name: 'azure',
  env: {
    // Azure OpenAI (provider `azure`): the resource endpoint (https://<resource>.openai.azure.com) and its key;
    // a catalog model's provider_model is the deployment name. Both set: the provider is offered.
    AZURE_OPENAI_ENDPOINT: z.url({ protocol: /^(https?|wss?)$/, error: 'must be an https:// (or wss://) URL' }).optional(),
    AZURE_OPENAI_API_KEY: optionalSecret(),
  },
  adapter: (e) =>
    e.AZURE_OPENAI_ENDPOINT && e.AZURE_OPENAI_API_KEY
      ? new AzureOpenAIAdapter({ endpoint: e.AZURE_OPENAI_ENDPOINT, apiKey: e.AZURE_OPENAI_API_KEY })
      : null,
});
