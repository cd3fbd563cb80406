// How every service starts, from services/<name>: `node --import @s2s/telemetry/register dist/main.js` in
// production; `node --conditions=@s2s/source --import tsx --import @s2s/telemetry/register src/main.ts` from
// sources (tsx first: this file is then TypeScript). ESM `import` bypasses require(), so express, pg and
// node:http imported by our ESM code are patched only through this loader hook, registered before the
// application graph loads. main.ts may then import everything statically; it calls startTelemetry()
// before buildApp() (express copies its methods into each app when the app is created).
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
