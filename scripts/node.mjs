#!/usr/bin/env node
// The Node.js the project runs on: 22 or 24, the LTS lines (Node 20 reached its end of life in April 2026,
// and the `openai` package declares `engines: node >= 22`). `npm start` and `npm test` go through here:
// `node scripts/node.mjs <program> [args…]` runs <program> (a .mjs/.js/.ts file is run by node itself) with
// a supported node first on PATH, then the workspace's node_modules/.bin. When the node running this is of another line, it brings Node.js
// BROUGHT_VERSION from the npm registry, the same way every other dependency comes: the official binary
// package `node-<platform>-<arch>` (what the npm `node` package installs), into .tools/, once.
// This file runs on any Node.js from 18 on. Imported, it gives `supportedNode()`.
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdirSync, renameSync, rmSync } from 'node:fs';
import { arch, platform } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const SUPPORTED_MAJORS = [22, 24];
/** Node 24, the Active LTS line the image runs too (Dockerfile); the newest 24 release on the registry. */
export const BROUGHT_VERSION = '24.21.0';
const root = join(dirname(fileURLToPath(import.meta.url)), '..');

export function isSupported(version = process.versions.node) {
  return SUPPORTED_MAJORS.includes(Number(version.split('.')[0]));
}

/** Path of the brought node binary under `dir` (whether or not it is there yet). */
export function broughtNode(dir = join(root, '.tools')) {
  const pkg = `node-${platform()}-${arch()}`;
  return join(dir, `node-${BROUGHT_VERSION}`, 'node_modules', pkg, 'bin', platform() === 'win32' ? 'node.exe' : 'node');
}

/** A node binary of a supported line: this one, or the brought one (installed when missing). */
export function supportedNode() {
  if (isSupported()) return process.execPath;
  return installedBroughtNode(`Node.js ${process.versions.node} is not a supported line (${SUPPORTED_MAJORS.join(' or ')}); `);
}

/** The brought Node.js BROUGHT_VERSION under .tools/, installed from the npm registry when missing (bench/scale packs it). */
export function installedBroughtNode(why = '') {
  const bin = broughtNode();
  if (existsSync(bin)) return bin;
  const pkg = `node-${platform()}-${arch()}@${BROUGHT_VERSION}`;
  const prefix = dirname(dirname(dirname(dirname(bin))));
  const partial = `${prefix}.partial-${process.pid}`;
  process.stderr.write(`[node] ${why}installing Node.js ${BROUGHT_VERSION} (${pkg}) into .tools/\n`);
  mkdirSync(partial, { recursive: true });
  try {
    execFileSync(
      'npm',
      ['install', '--no-save', '--no-audit', '--no-fund', '--ignore-scripts', '--prefer-offline', '--prefix', partial, pkg],
      {
        stdio: ['ignore', 'ignore', 'inherit'],
      },
    );
  } catch (err) {
    rmSync(partial, { recursive: true, force: true });
    throw new Error(
      `could not install ${pkg} from the npm registry (${err instanceof Error ? err.message : String(err)}); ` +
        `install Node.js ${SUPPORTED_MAJORS.join(' or ')} (https://nodejs.org) and run the command again`,
      { cause: err },
    );
  }
  rmSync(prefix, { recursive: true, force: true });
  renameSync(partial, prefix);
  if (!existsSync(bin)) throw new Error(`${pkg} has no ${bin}`);
  return bin;
}

/** Runs `program args` on a supported node; resolves with its exit code (signals forwarded to it). */
export function runOnSupportedNode(program, args) {
  const node = supportedNode();
  // The workspace's tools (tap) resolve as under `npm run`.
  const env = { ...process.env, PATH: `${dirname(node)}:${join(root, 'node_modules', '.bin')}:${process.env.PATH ?? ''}` };
  const [cmd, argv] = /\.(m?js|ts)$/.test(program) ? [node, [program, ...args]] : [program, args];
  const child = spawn(cmd, argv, { stdio: 'inherit', env });
  // A terminal's Ctrl-C reaches the child as well; a signal sent to this process alone is passed on.
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.on(signal, () => child.kill(signal));
  return new Promise((resolve) => {
    child.once('error', (err) => {
      process.stderr.write(`[node] ${program}: ${err.message}\n`);
      resolve(127);
    });
    child.once('exit', (code, signal) => resolve(code ?? (signal ? 128 : 1)));
  });
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const [program, ...args] = process.argv.slice(2);
  if (!program) {
    process.stderr.write('usage: node scripts/node.mjs <program> [args…]\n');
    process.exit(2);
  }
  try {
    process.exitCode = await runOnSupportedNode(program, args);
  } catch (err) {
    process.stderr.write(`[node] ${err instanceof Error ? err.message : String(err)}\n`);
    process.exitCode = 1;
  }
}
