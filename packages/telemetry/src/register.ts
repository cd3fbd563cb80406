// Loaded with `node --import tsx --import @s2s/telemetry/register <service>/src/main.ts`.
// ESM `import` bypasses require(), so express / pg / http imported from our ESM services are only
// patched if the import-in-the-middle loader hook is registered before the application graph loads.
import { createRequire, register } from 'node:module';
import { pathToFileURL } from 'node:url';

const require = createRequire(import.meta.url);
// @opentelemetry/instrumentation is sdk-node's dependency, not ours: resolve its hook from there.
const fromSdk = createRequire(require.resolve('@opentelemetry/sdk-node'));
const hook = pathToFileURL(fromSdk.resolve('@opentelemetry/instrumentation/hook.mjs'));

// Only the modules our instrumentations patch are wrapped; wrapping every module costs start-up time
// and breaks a few packages.
register(hook.href, import.meta.url, {
  data: { include: ['express', 'pg', 'pg-pool', 'http', 'https', 'node:http', 'node:https'] },
});
