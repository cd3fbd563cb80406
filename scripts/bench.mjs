#!/usr/bin/env node
// `npm run bench`: every service's `bench` script, one after another (they share the 2 cores otherwise).
// `npm run bench -- --quick`: the continuous check, under two minutes: the relay against the bare pass-through
// (N = 50, one short round) and the control plane's creates against pgbench running the same statement.
// Other arguments name the services to run (`npm run bench -- relay`).
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const args = process.argv.slice(2);
const quick = args.includes('--quick');
const only = args.filter((a) => !a.startsWith('--'));
/** What --quick runs, with the short parameters each service's bench takes. */
const QUICK = {
  relay: {
    env: { BENCH_SESSIONS: '50', BENCH_ROUNDS: '1', BENCH_SECONDS: '3', BENCH_WARMUP: '1', BENCH_IDLE: '50', BENCH_PRIME: '3' },
    args: [],
  },
  'control-plane': { env: {}, args: ['--quick'] },
};
const started = Date.now();
let failed = 0;
for (const name of readdirSync(join(root, 'services'))) {
  const manifest = join(root, 'services', name, 'package.json');
  if (!existsSync(manifest) || (only.length && !only.includes(name))) continue;
  if (!JSON.parse(readFileSync(manifest, 'utf8')).scripts?.bench) continue;
  if (quick && !(name in QUICK)) continue;
  const q = quick ? QUICK[name] : { env: {}, args: [] };
  process.stdout.write(`\n=== ${name}${quick ? ' (quick)' : ''} ===\n`);
  const r = spawnSync('npm', ['run', '--silent', 'bench', ...(q.args.length ? ['--', ...q.args] : [])], {
    cwd: join(root, 'services', name),
    env: { ...process.env, ...q.env },
    stdio: 'inherit',
  });
  if (r.status !== 0) failed++;
}
process.stdout.write(`\nbench: ${((Date.now() - started) / 1000).toFixed(0)} s${failed ? `, ${failed} failed` : ''}\n`);
process.exit(failed ? 1 : 0);
