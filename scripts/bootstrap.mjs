#!/usr/bin/env node
// Makes a fresh clone runnable with nothing but Node.js and npm: finds or fetches pnpm 10,
// installs the workspace from the lockfile when it changed, generates the Prisma client, and builds the web
// console (packages/console/web-dist) when its sources changed.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pnpmCommand, root } from './pnpm.mjs';

function log(msg) {
  process.stderr.write(`[bootstrap] ${msg}\n`);
}

function digest(files) {
  const h = createHash('sha256');
  for (const f of files) h.update(existsSync(f) ? readFileSync(f) : f);
  return h.digest('hex');
}

const marker = join(root, 'node_modules', '.bootstrap-digest');
const lock = join(root, 'pnpm-lock.yaml');
const schema = join(root, 'packages', 'db', 'prisma', 'schema.prisma');
const wanted = digest([lock, schema, join(root, 'package.json')]);
const have = existsSync(marker) ? readFileSync(marker, 'utf8') : '';

if (have !== wanted) {
  const pnpm = pnpmCommand();
  const frozen = existsSync(lock) ? ['--frozen-lockfile'] : [];
  log('installing workspace dependencies');
  execFileSync(pnpm, ['install', ...frozen, '--reporter=append-only'], {
    cwd: root,
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  if (existsSync(schema)) {
    log('generating the Prisma client');
    execFileSync(pnpm, ['--filter', '@s2s/db', 'run', 'generate'], {
      cwd: root,
      stdio: ['ignore', 'ignore', 'inherit'],
    });
  }
  writeFileSync(marker, wanted);
}

// The console the control plane serves at /console: built from its sources, not committed.
const consoleDir = join(root, 'packages', 'console');
const consoleMarker = join(consoleDir, 'web-dist', '.source-digest');
const consoleSources = [
  lock,
  join(consoleDir, 'build-web.mjs'),
  join(root, 'packages', 'core', 'src', 'money.ts'),
  ...readdirSync(join(consoleDir, 'web'))
    .sort()
    .map((f) => join(consoleDir, 'web', f)),
];
const consoleWanted = digest(consoleSources);
if ((existsSync(consoleMarker) ? readFileSync(consoleMarker, 'utf8') : '') !== consoleWanted) {
  log('building the web console');
  execFileSync(process.execPath, [join(consoleDir, 'build-web.mjs')], { cwd: consoleDir, stdio: ['ignore', 'ignore', 'inherit'] });
  writeFileSync(consoleMarker, consoleWanted);
}
