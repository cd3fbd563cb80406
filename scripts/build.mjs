#!/usr/bin/env node
// `npm run build`: compiles every workspace package with a `build` script into its dist/ (JavaScript,
// declarations, source maps), dependencies first. Stale output is removed first.
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { pnpmCommand, root } from './pnpm.mjs';

for (const top of ['packages', 'services', 'scripts', 'tests']) {
  for (const name of readdirSync(join(root, top))) {
    const dist = join(root, top, name, 'dist');
    if (existsSync(join(root, top, name, 'tsconfig.build.json'))) rmSync(dist, { recursive: true, force: true });
  }
}
// Two at a time: the machine has two cores; pnpm orders by workspace dependencies.
const r = spawnSync(pnpmCommand(), ['-r', '--workspace-concurrency=2', 'run', 'build'], { cwd: root, stdio: 'inherit' });
process.exit(r.status ?? 1);
