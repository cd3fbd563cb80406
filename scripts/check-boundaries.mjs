#!/usr/bin/env node
// Lint of the house rules a type checker cannot see: no service imports another service, no file
// imports another package's src/ by path, process.env is read only in config/composition files.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(fileURLToPath(import.meta.url), '..', '..');
const problems = [];

function walk(dir, out = []) {
  for (const name of readdirSync(dir)) {
    if (name === 'node_modules' || name === 'generated' || name.startsWith('.')) continue;
    const p = join(dir, name);
    if (statSync(p).isDirectory()) walk(p, out);
    else if (p.endsWith('.ts')) out.push(p);
  }
  return out;
}

const ENV_ALLOWED = /(^|\/)(config|main|migrate-cli|testing|bench|register|sdk)\.ts$|\/(test|bench|scripts)\//;

for (const top of ['packages', 'services']) {
  for (const unit of readdirSync(join(root, top))) {
    for (const file of walk(join(root, top, unit))) {
      const rel = relative(root, file);
      const text = readFileSync(file, 'utf8');
      for (const m of text.matchAll(/from\s+['"]([^'"]+)['"]/g)) {
        const spec = m[1];
        if (/\.\.\/\.\.\/(services|packages)\//.test(spec) || /^(\.\.\/)+(services|packages)\//.test(spec)) {
          problems.push(`${rel}: imports another unit by path (${spec})`);
        }
        if (top === 'services' && /^@s2s\/(control-plane|relay|billing|local-provider-service)/.test(spec)) {
          problems.push(`${rel}: imports another service (${spec})`);
        }
        if (/^@s2s\/[^/]+\/src\//.test(spec)) problems.push(`${rel}: imports a package's src/ (${spec})`);
      }
      if (top === 'packages' && unit === 'contract' && /@prisma|@s2s\/db/.test(text)) {
        problems.push(`${rel}: the contracts package must not import Prisma`);
      }
      if (/process\.env\b/.test(text) && !ENV_ALLOWED.test(rel)) {
        problems.push(`${rel}: reads process.env outside a config or composition root`);
      }
    }
  }
}

if (problems.length) {
  console.error(problems.join('\n'));
  process.exit(1);
}
console.log('boundaries: ok');
