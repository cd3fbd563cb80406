// The documented service start-up, end to end: a child process started with
// `node --import tsx --import @s2s/telemetry/register` gets spans for modules imported statically.
import { execFile } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import t from 'tap';

const packageDir = join(dirname(fileURLToPath(import.meta.url)), '..');

interface SpanSummary {
  name: string;
  kind: number;
  scope: string;
  attributes: Record<string, unknown>;
}

t.test('node --import tsx --import @s2s/telemetry/register instruments static ESM imports', async (t) => {
  const { stdout } = await promisify(execFile)(
    process.execPath,
    ['--import', 'tsx', '--import', '@s2s/telemetry/register', 'test/fixtures/esm-server.ts'],
    { cwd: packageDir, timeout: 60_000, env: { ...process.env, NODE_OPTIONS: '' } },
  );
  const spans = JSON.parse(stdout) as SpanSummary[];
  const server = spans.find((s) => s.kind === 1 && s.scope.includes('instrumentation-http'));
  t.ok(server, 'server span from the statically imported node:http');
  t.ok(
    spans.some((s) => s.kind === 2),
    'client span from the statically imported node:http',
  );
  t.notMatch(stdout, 'vr_sk_fixture');
  t.notMatch(stdout, 'query-secret');
});
