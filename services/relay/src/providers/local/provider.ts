import { optionalSecret, wsUrl } from '../../env-fields.js';
import { defineProvider } from '../shared/entry.js';
import { LocalAdapter } from './adapter.js';

/** Always offered. */
export const localProvider = defineProvider({
  name: 'local',
  env: {
    // The local upstream simulator (provider `local`).
    LOCAL_PROVIDER_URL: wsUrl().default('ws://127.0.0.1:8090/v1/realtime'),
    // Bearer key of the local simulator, when it was started with one.
    LOCAL_PROVIDER_API_KEY: optionalSecret(),
  },
  adapter: (e) => new LocalAdapter({ url: e.LOCAL_PROVIDER_URL, apiKey: e.LOCAL_PROVIDER_API_KEY ?? null }),
});
