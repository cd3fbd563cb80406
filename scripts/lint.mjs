#!/usr/bin/env node
// `npm run lint`: the project's static checks, run side by side once the workspace is bootstrapped. They read
// the tree and write nothing but their own caches, so none waits for another: on 2 cores the run takes about
// half of the checks' summed time. Each check's output is printed whole when it ends, under its name, so two
// checks' lines never interleave; a check still running is named every 15 s. Exits 1 if any check failed.
import { spawn } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');

/** name → command line, run by the shell from the root with node_modules/.bin first on PATH. */
const CHECKS = [
  ['types', 'tsgo -p tsconfig.json'],
  ['types (console)', 'tsgo -p packages/console/web/tsconfig.json'],
  ['eslint', 'eslint --cache --cache-location node_modules/.cache/eslint/ .'],
  ['prettier', 'prettier --check --cache --log-level=warn .'],
  ['depcruise', 'depcruise --config .dependency-cruiser.cjs packages services scripts tests bench'],
  ['api docs', 'tsx --conditions=@s2s/source scripts/api-docs.ts --check'],
  ['docs:check', 'tsx scripts/docs-check.ts'],
];

const env = { ...process.env, PATH: `${join(root, 'node_modules', '.bin')}:${process.env.PATH}` };
const started = Date.now();
const running = new Set(CHECKS.map(([name]) => name));
const seconds = (ms) => (ms / 1000).toFixed(1);

const heartbeat = setInterval(() => {
  console.log(`[lint] ${seconds(Date.now() - started)} s: still running ${[...running].join(', ')}`);
}, 15_000);

const results = await Promise.all(
  CHECKS.map(
    ([name, command]) =>
      new Promise((resolve) => {
        const child = spawn(command, { cwd: root, env, shell: true, stdio: ['ignore', 'pipe', 'pipe'] });
        const out = [];
        child.stdout.on('data', (d) => out.push(d));
        child.stderr.on('data', (d) => out.push(d));
        child.on('close', (code, signal) => {
          running.delete(name);
          const text = Buffer.concat(out).toString().trimEnd();
          const ok = code === 0;
          console.log(`[lint] ${name}: ${ok ? 'ok' : `failed (${signal ?? `exit ${code}`})`} in ${seconds(Date.now() - started)} s`);
          if (text) console.log(text);
          resolve(ok);
        });
      }),
  ),
);
clearInterval(heartbeat);
const failed = CHECKS.filter((_, i) => !results[i]).map(([name]) => name);
console.log(failed.length === 0 ? `[lint] all ${CHECKS.length} checks passed` : `[lint] failed: ${failed.join(', ')}`);
process.exit(failed.length === 0 ? 0 : 1);
