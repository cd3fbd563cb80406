#!/usr/bin/env node
// `npm run bench`: every service's `bench` script, one after another (they share the 2 cores otherwise).
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const only = process.argv.slice(2);
let failed = 0;
for (const name of readdirSync(join(root, 'services'))) {
  const manifest = join(root, 'services', name, 'package.json');
  if (!existsSync(manifest) || (only.length && !only.includes(name))) continue;
  if (!JSON.parse(readFileSync(manifest, 'utf8')).scripts?.bench) continue;
  process.stdout.write(`\n=== ${name} ===\n`);
  const r = spawnSync('npm', ['run', '--silent', 'bench'], { cwd: join(root, 'services', name), stdio: 'inherit' });
  if (r.status !== 0) failed++;
}
process.exit(failed ? 1 : 0);
