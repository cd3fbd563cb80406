// pnpm 10 for the root scripts: the one on PATH when it is 10.x, else a copy installed into .tools/.
// Run as a script it passes its arguments on: `node scripts/pnpm.mjs -r run build`.
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const PNPM_VERSION = '10.34.9';
const toolsDir = join(root, '.tools');

export function pnpmCommand() {
  const onPath = spawnSync('pnpm', ['--version'], { encoding: 'utf8' });
  if (onPath.status === 0 && onPath.stdout.trim().startsWith('10.')) return 'pnpm';
  const local = join(toolsDir, 'node_modules', '.bin', 'pnpm');
  if (!existsSync(local)) {
    process.stderr.write(`[bootstrap] installing pnpm ${PNPM_VERSION} into .tools/\n`);
    mkdirSync(toolsDir, { recursive: true });
    execFileSync('npm', ['install', '--no-save', '--prefix', toolsDir, `pnpm@${PNPM_VERSION}`], {
      stdio: ['ignore', 'ignore', 'inherit'],
    });
  }
  return local;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const r = spawnSync(pnpmCommand(), process.argv.slice(2), { cwd: process.cwd(), stdio: 'inherit' });
  process.exit(r.status ?? 1);
}
