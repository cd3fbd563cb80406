// `bench/scale` (docs/benchmarks.md, "Scale"): `npm run bench:scale -- pack [--out=DIR]` makes the self-contained
// pack; `npm run bench:scale -- run [options]` runs the figures from this repository; in an unpacked pack,
// `./run [options]` runs them from the pack (this file's bundle, app/scale.mjs). `load-worker` is internal.
import { mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { TempDir } from '@s2s/chaos';
import { repoRoot } from '../services.js';
import { packKit, repoKit, unpackPayload } from './kit.js';
import { serveLoadWorker } from './load.js';
import { RUN_OPTIONS, RUN_USAGE, runScale } from './run.js';

const [command, ...rest] = process.argv.slice(2);
const USAGE =
  `usage: bench/scale pack [--out=DIR] | run [options] (in a pack: ./run [options])\n${RUN_USAGE}\n` +
  '  --unpack=DIR                     (a pack) unpack app/ (the services), pg/ and nats-server into DIR, and stop\n';

if (command === 'load-worker') {
  serveLoadWorker();
} else if (command === 'pack') {
  const { values } = parseArgs({ args: rest, options: { out: { type: 'string' } } });
  const { pack } = await import('./pack.js');
  const out = resolve(values.out ?? `${repoRoot}.data/scale-pack`);
  const { folder, archive, bytes } = await pack(out);
  process.stdout.write(`${folder}\n${archive} (${bytes} bytes)\n`);
} else if (command === 'run') {
  const { values } = parseArgs({
    args: rest,
    options: { ...RUN_OPTIONS, pack: { type: 'string' }, unpack: { type: 'string' }, help: { type: 'boolean' } },
  });
  if (values.help) {
    process.stdout.write(USAGE);
    process.exit(0);
  }
  if (values.unpack) {
    // A role on another machine: `./run --unpack=DIR`, then `./node DIR/app/relay.mjs` (bench/scale/README.md).
    if (!values.pack) throw new Error('--unpack is for a pack (./run --unpack=DIR)');
    await unpackPayload(values.pack, resolve(values.unpack));
    process.exit(0);
  }
  const dir = new TempDir('scale');
  let code = 0;
  try {
    // The pack's programs in a folder of their own (the run's data goes beside it).
    const programs = join(dir.path, 'programs');
    if (values.pack) mkdirSync(programs, { mode: 0o755 });
    const kit = values.pack ? await packKit(values.pack, programs) : repoKit();
    await runScale(kit, values, process.argv[1]!, dir);
  } catch (err) {
    process.stderr.write(`[scale] ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    code = 1;
  } finally {
    dir.remove();
  }
  process.exit(code);
} else {
  process.stderr.write(USAGE);
  process.exit(2);
}
