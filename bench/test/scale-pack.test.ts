// bench/scale pack, for real: the pack is built, fits the budget, is unpacked into a temporary folder and run there
// with an environment that has no Node.js (a PATH of only the few programs the run script and the run use), short
// windows and few sessions; it must print both figures. Minutes on a busy machine (brotli at quality 11 when the
// payload cache is cold), hence here (npm run test:bench) and not in the product suite.
import { execFileSync, spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { MAX_PACK_BYTES, pack } from '../scale/pack.js';

t.setTimeout(40 * 60_000);

t.test('pack, unpack, run without Node.js on PATH: both figures printed', async (t) => {
  const work = mkdtempSync(join(tmpdir(), 'scale-pack-test-'));
  // As root the run's PostgreSQL runs as the OS user postgres, which must reach the unpacked folder.
  chmodSync(work, 0o755);
  t.teardown(() => rmSync(work, { recursive: true, force: true }));
  const { archive, bytes } = await pack(join(work, 'out'));
  t.ok(bytes <= MAX_PACK_BYTES, `the archive is ${(bytes / 1e6).toFixed(1)} MB, within ${MAX_PACK_BYTES / 1e6} MB`);

  const unpacked = join(work, 'elsewhere');
  mkdirSync(unpacked);
  execFileSync('tar', ['-x', '-J', '-f', archive, '-C', unpacked]);
  rmSync(join(work, 'out'), { recursive: true, force: true });

  // Only what a bare machine has: no node, no npm, no pgbench, no nats-server.
  const bin = join(work, 'bin');
  mkdirSync(bin);
  for (const tool of ['sh', 'dirname', 'tar', 'xz', 'taskset', 'id']) {
    const path = execFileSync('sh', ['-c', `command -v ${tool}`], { encoding: 'utf8' }).trim();
    symlinkSync(path, join(bin, tool));
  }
  t.notOk(existsSync(join(bin, 'node')), 'no node on the PATH of the run');

  const args = ['--duration=2', '--warmup=1', '--wallets=4', '--clients=8', '--statement-clients=4', '--sessions=5', '--session-seconds=2'];
  const child = spawn(join(unpacked, 's2s-scale', 'run'), args, { env: { PATH: bin }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout.on('data', (c: Buffer) => (out += c.toString()));
  child.stderr.on('data', (c: Buffer) => (err += c.toString()));
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  t.equal(code, 0, `./run exits 0${code === 0 ? '' : `:\n${err.slice(-3000)}`}`);
  // No pgbench in a pack: its Node runner times the statement alone.
  t.match(
    out,
    /creates per second: \d+ = \d+\.\d\d x the Node runner of the same statement \(\d+ tps\)/,
    'creates per second against the statement alone',
  );
  t.match(out, /sessions per relay core at p99 added <= 5 ms: (\d+|below \d+)/, 'sessions per relay core');
});
