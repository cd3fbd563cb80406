#!/usr/bin/env node
// Makes a fresh clone runnable with nothing but Node.js and npm: finds or fetches pnpm 10,
// installs the workspace from the lockfile when it changed, and generates the Prisma client.
import { execFileSync, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const PNPM_VERSION = '10.34.9';
const toolsDir = join(root, '.tools');

function log(msg) {
  process.stderr.write(`[bootstrap] ${msg}\n`);
}

function pnpmCommand() {
  const onPath = spawnSync('pnpm', ['--version'], { encoding: 'utf8' });
  if (onPath.status === 0 && onPath.stdout.trim().startsWith('10.')) return ['pnpm'];
  const local = join(toolsDir, 'node_modules', '.bin', 'pnpm');
  if (!existsSync(local)) {
    log(`installing pnpm ${PNPM_VERSION} into .tools/`);
    mkdirSync(toolsDir, { recursive: true });
    execFileSync('npm', ['install', '--no-save', '--prefix', toolsDir, `pnpm@${PNPM_VERSION}`], {
      stdio: ['ignore', 'ignore', 'inherit'],
    });
  }
  return [local];
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
  const [pnpm] = pnpmCommand();
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
