#!/usr/bin/env node
// `node scripts/runtime-tree.mjs <dir>`: the production tree of the image, after `npm run build`. Copies
// the services and the workspace packages they depend on (package.json and the `files` it lists: dist/,
// migrations/), then installs their production dependencies from the pnpm store. Then it checks that every
// platform-specific optional dependency the workspace has (dbmate's binary, @dbmate/linux-x64 here) is in
// the tree too: the tree runs with nothing else to resolve from.
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
// patches/: the lockfile's patchedDependencies (werift), applied again by this install.
for (const f of ['pnpm-lock.yaml', 'pnpm-workspace.yaml', 'patches']) cpSync(join(root, f), join(out, f), { recursive: true });
for (const dir of wanted) {
  const json = manifest(dir);
  writeManifest(dir, json);
  for (const entry of json.files ?? []) {
    const from = join(root, dir, entry);
    if (!existsSync(from)) throw new Error(`${dir}/${entry} is missing: run npm run build first`);
    cpSync(from, join(out, dir, entry), { recursive: true, filter: (p) => !p.endsWith('.tsbuildinfo') });
  }
}

// The lockfile pins every version; it is rewritten for the pruned manifests inside the tree only. That
// re-resolution reads the registry's metadata of each package's optional dependencies (dbmate lists seven
// platform packages, the lockfile only the one installed): `--offline` without that metadata cached (a
// fresh clone, the image's build stage: frozen installs never fetch it) silently drops the platform binary.
// `--prefer-offline` takes the packages from the store and asks the registry only for missing metadata.
const r = spawnSync(
  pnpmCommand(),
  ['install', '--prod', '--prefer-offline', '--no-frozen-lockfile', '--config.auto-install-peers=false', '--reporter=append-only'],
  { cwd: out, stdio: ['ignore', 'inherit', 'inherit'] },
);
if (r.status !== 0) process.exit(r.status ?? 1);

/** name@version → the optional dependencies installed beside it, in `base`'s node_modules/.pnpm. */
function installedOptionals(base) {
  const store = join(base, 'node_modules', '.pnpm');
  const found = new Map();
  for (const entry of readdirSync(store)) {
    const at = entry.indexOf('@', 1);
    if (at < 0) continue;
    const name = entry.startsWith('@') ? entry.slice(0, at).replace('+', '/') : entry.slice(0, at);
    const modules = join(store, entry, 'node_modules');
    const manifestFile = join(modules, name, 'package.json');
    if (!existsSync(manifestFile)) continue;
    const pkg = JSON.parse(readFileSync(manifestFile, 'utf8'));
    const key = `${pkg.name}@${pkg.version}`;
    const have = found.get(key) ?? new Set();
    for (const dep of Object.keys(pkg.optionalDependencies ?? {})) if (existsSync(join(modules, dep))) have.add(dep);
    found.set(key, have);
  }
  return found;
}

const inWorkspace = installedOptionals(root);
const missing = [];
for (const [pkg, have] of installedOptionals(out)) {
  for (const dep of inWorkspace.get(pkg) ?? []) if (!have.has(dep)) missing.push(`${dep} (of ${pkg})`);
}
if (missing.length) {
  process.stderr.write(`[runtime-tree] the tree lacks optional dependencies the workspace has: ${missing.join(', ')}\n`);
  process.exit(1);
}
process.stderr.write(`[runtime-tree] ${[...wanted].sort().join(', ')} installed in ${out}\n`);
