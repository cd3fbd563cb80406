#!/usr/bin/env node
// `node scripts/runtime-tree.mjs <dir>`: the production tree of the image, after `npm run build`. Copies
// the services and the workspace packages they depend on (package.json and the `files` it lists: dist/,
// migrations/), then installs their production dependencies from the pnpm store, offline.
// The Dockerfile runs it; tests/e2e/compiled-entrypoints.test.ts runs it into a temp dir.
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { pnpmCommand, root } from './pnpm.mjs';

const out = process.argv[2] && resolve(process.argv[2]);
if (!out) {
  process.stderr.write('usage: node scripts/runtime-tree.mjs <dir>\n');
  process.exit(2);
}
if (existsSync(out) && readdirSync(out).length) {
  process.stderr.write(`[runtime-tree] ${out} is not empty\n`);
  process.exit(2);
}

const manifest = (dir) => JSON.parse(readFileSync(join(root, dir, 'package.json'), 'utf8'));
const dirsOf = (top) =>
  readdirSync(join(root, top))
    .filter((n) => existsSync(join(root, top, n, 'package.json')))
    .map((n) => `${top}/${n}`);
const packageDir = new Map(dirsOf('packages').map((dir) => [manifest(dir).name, dir]));

// Every service, and the workspace packages their production dependencies reach.
const wanted = new Set(dirsOf('services'));
for (const dir of wanted) {
  for (const [name, range] of Object.entries(manifest(dir).dependencies ?? {})) {
    if (!String(range).startsWith('workspace:')) continue;
    const dep = packageDir.get(name);
    if (!dep) throw new Error(`${dir} depends on ${name}, which is not under packages/`);
    wanted.add(dep);
  }
}

// Without devDependencies in the manifests, no optional peer (typescript, the prisma CLI under
// @prisma/client) resolves through a development tool.
function writeManifest(dir, json) {
  const { devDependencies: _dev, ...prod } = json;
  mkdirSync(join(out, dir), { recursive: true });
  writeFileSync(join(out, dir, 'package.json'), `${JSON.stringify(prod, null, 2)}\n`);
}

writeManifest('.', JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')));
for (const f of ['pnpm-lock.yaml', 'pnpm-workspace.yaml']) cpSync(join(root, f), join(out, f));
for (const dir of wanted) {
  const json = manifest(dir);
  writeManifest(dir, json);
  for (const entry of json.files ?? []) {
    const from = join(root, dir, entry);
    if (!existsSync(from)) throw new Error(`${dir}/${entry} is missing: run npm run build first`);
    cpSync(from, join(out, dir, entry), { recursive: true, filter: (p) => !p.endsWith('.tsbuildinfo') });
  }
}

// The lockfile pins every version; it is rewritten for the pruned manifests inside the tree only.
const r = spawnSync(
  pnpmCommand(),
  ['install', '--prod', '--offline', '--no-frozen-lockfile', '--config.auto-install-peers=false', '--reporter=append-only'],
  { cwd: out, stdio: ['ignore', 'inherit', 'inherit'] },
);
if (r.status !== 0) process.exit(r.status ?? 1);
process.stderr.write(`[runtime-tree] ${[...wanted].sort().join(', ')} installed in ${out}\n`);
