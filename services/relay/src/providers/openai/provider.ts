import { optionalSecret, wsUrl } from '../../env-fields.js';
import { defineProvider } from '../shared/entry.js';
import { OpenAIRealtimeAdapter } from './adapter.js';

/** Offered when its key is set. */
export const openaiProvider = defineProvider({
  name: 'openai',
  env: {
    // OpenAI Realtime (provider `openai`); the key comes from configuration only.
    OPENAI_API_KEY: optionalSecret(),
    // Its endpoint.
    OPENAI_REALTIME_URL: wsUrl().default('wss://api.openai.com/v1/realtime'),
  },
  adapter: (e) => (e.OPENAI_API_KEY ? new OpenAIRealtimeAdapter({ apiKey: e.OPENAI_API_KEY, url: e.OPENAI_REALTIME_URL }) : null),
});
