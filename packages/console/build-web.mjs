#!/usr/bin/env node
// Builds the console into web-dist/: the Preact app (app.js, app.css with Pico CSS), the AudioWorklet
// (worklet.js) and index.html. Run by `npm run build` (this package's build) and by scripts/bootstrap.mjs
// whenever the sources changed, so that `npm start` and `npm test` serve a current console.
import { copyFileSync, mkdirSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const here = dirname(fileURLToPath(import.meta.url));
const out = join(here, 'web-dist');
rmSync(out, { recursive: true, force: true });
mkdirSync(out, { recursive: true });
const common = {
  bundle: true,
  format: 'esm',
  target: 'es2022',
  platform: 'browser',
  minify: true,
  sourcemap: true,
  // Workspace packages (the contract's types, core's money) from their sources, as in development.
  conditions: ['@s2s/source'],
  logLevel: 'warning',
  legalComments: 'linked',
};
await build({
  ...common,
  entryPoints: { app: join(here, 'web/main.tsx'), worklet: join(here, 'web/worklet.ts') },
  outdir: out,
  jsx: 'automatic',
  jsxImportSource: 'preact',
  tsconfig: join(here, 'web/tsconfig.json'),
});
copyFileSync(join(here, 'web/index.html'), join(out, 'index.html'));
