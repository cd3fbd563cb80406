#!/usr/bin/env node
// `npm run bench`: the benchmarks of the bench/ workspace (docs/benchmarks.md), one after another (they share
// the 2 cores otherwise): billing, control-plane and relay. `npm run bench -- --quick`: the continuous check,
// under two minutes: the relay against the bare pass-through (N = 50, one short round) and the control plane's
// creates against pgbench running the same statement. Other arguments name the benchmarks to run, including
// those left out of the default set (`npm run bench -- edge`, `npm run bench -- control-plane:cpu`); options
// after one name go to that benchmark (`npm run bench -- control-plane --no-telemetry`).
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const benchDir = join(root, 'bench');
const args = process.argv.slice(2);
const quick = args.includes('--quick');
const only = args.filter((a) => !a.startsWith('--'));
/** Other options go to the one benchmark named (`npm run bench -- relay --sessions=50,100`). */
const options = args.filter((a) => a.startsWith('--') && a !== '--quick');

/** Each benchmark: its script in bench/, whether `npm run bench` runs it by default, and what --quick runs. */
const BENCHES = {
  billing: { script: 'billing/bench.ts', byDefault: true },
  'bus:acked-publish': { script: 'bus/acked-publish.ts', byDefault: false },
  'control-plane': { script: 'control-plane/bench.ts', byDefault: true, quick: { env: {}, args: ['--quick'] } },
  'control-plane:cpu': { script: 'control-plane/cpu.ts', byDefault: false },
  edge: { script: 'edge/bench.ts', byDefault: false },
  'relay:hot-tricks': { script: 'relay/hot-tricks.ts', byDefault: false },
  'relay:phone-codec': { script: 'relay/phone-codec.ts', byDefault: false },
  'scale:creates': { script: 'scale/creates.ts', byDefault: false },
  relay: {
    script: 'relay/bench.ts',
    byDefault: true,
    quick: {
      env: { BENCH_SESSIONS: '50', BENCH_ROUNDS: '1', BENCH_SECONDS: '3', BENCH_WARMUP: '1', BENCH_IDLE: '50', BENCH_PRIME: '3' },
      args: [],
    },
  },
};

const unknown = only.filter((name) => !(name in BENCHES));
if (unknown.length) {
  process.stderr.write(`bench: no benchmark named ${unknown.join(', ')}; known: ${Object.keys(BENCHES).join(', ')}\n`);
  process.exit(2);
}

if (options.length && only.length !== 1) {
  process.stderr.write(`bench: ${options.join(' ')} needs exactly one benchmark named before it\n`);
  process.exit(2);
}

const started = Date.now();
// The benchmarks' own tests first (their statistics and parsers): a benchmark that would print wrong figures stops here.
// Not the scale pack's test (minutes: it packs, unpacks and runs; `npm run test:bench` runs it).
const testFiles = readdirSync(join(benchDir, 'test'))
  .filter((f) => f.endsWith('.test.ts') && f !== 'scale-pack.test.ts')
  .map((f) => join('bench', 'test', f));
const tests = spawnSync(join(root, 'node_modules', '.bin', 'tap'), ['-R', 'terse', ...testFiles], {
  cwd: root,
  stdio: 'inherit',
});
if (tests.status !== 0) {
  process.stderr.write('bench: the tests of bench/ failed (npm run test:bench); no figure was measured\n');
  process.exit(1);
}
let failed = 0;
for (const [name, bench] of Object.entries(BENCHES)) {
  if (only.length ? !only.includes(name) : !bench.byDefault) continue;
  if (quick && !bench.quick) continue;
  const q = quick ? bench.quick : { env: {}, args: [] };
  process.stdout.write(`\n=== ${name}${quick ? ' (quick)' : ''} ===\n`);
  // NODE_OPTIONS, not a flag: the services a benchmark starts as processes resolve the workspace's sources too.
  const nodeOptions = [process.env.NODE_OPTIONS, '--conditions=@s2s/source'].filter(Boolean).join(' ');
  const r = spawnSync(process.execPath, ['--import', 'tsx', bench.script, ...q.args, ...options], {
    cwd: benchDir,
    env: { ...process.env, NODE_OPTIONS: nodeOptions, ...q.env },
    stdio: 'inherit',
  });
  if (r.status !== 0) failed++;
}
process.stdout.write(`\nbench: ${((Date.now() - started) / 1000).toFixed(0)} s${failed ? `, ${failed} failed` : ''}\n`);
process.exit(failed ? 1 : 0);
