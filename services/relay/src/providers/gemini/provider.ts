import { optionalSecret, wsUrl } from '../../env-fields.js';
import { defineProvider } from '../shared/entry.js';
import { GeminiLiveAdapter } from './adapter.js';

/** Offered when its key is set. */
export const geminiProvider = defineProvider({
  name: 'gemini',
  env: {
    // Gemini Live (provider `gemini`).
    GEMINI_API_KEY: optionalSecret(),
    // Its endpoint; the adapter's default when unset.
    GEMINI_LIVE_URL: wsUrl().optional(),
  },
  adapter: (e) =>
    e.GEMINI_API_KEY ? new GeminiLiveAdapter({ apiKey: e.GEMINI_API_KEY, ...(e.GEMINI_LIVE_URL ? { url: e.GEMINI_LIVE_URL } : {}) }) : null,
});
