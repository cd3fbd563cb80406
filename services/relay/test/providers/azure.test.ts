import t from 'tap';
import { AZURE_REALTIME_PATH, AzureOpenAIAdapter, azureRealtimeUrl } from '../../src/providers/index.js';
import { adapterSuite } from './adapter-suite.js';
import { openAIProtocolSpec } from './simulator-harness.js';

// The simulator as Azure OpenAI's GA endpoint: it answers only at /openai/v1/realtime and takes the key
// only in an `api-key` header, so a wrong path or a bearer key fails the suite.
adapterSuite(
  t,
  openAIProtocolSpec('azure', (url, apiKey) => new AzureOpenAIAdapter({ endpoint: new URL(url).origin.replace(/^ws/, 'http'), apiKey }), {
    path: AZURE_REALTIME_PATH,
    apiKeyHeader: 'api-key',
  }),
);

t.test('azure: the resource endpoint becomes the GA realtime URL', async (t) => {
  t.equal(azureRealtimeUrl('https://acme.openai.azure.com'), 'wss://acme.openai.azure.com/openai/v1/realtime');
  t.equal(azureRealtimeUrl('https://acme.openai.azure.com/'), 'wss://acme.openai.azure.com/openai/v1/realtime');
  t.equal(azureRealtimeUrl('wss://acme.openai.azure.com'), 'wss://acme.openai.azure.com/openai/v1/realtime');
});
