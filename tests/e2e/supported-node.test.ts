// The project runs and is tested on a supported Node.js line (22 or 24; scripts/node.mjs). On a machine
// whose only node is of another line (here: Node 20, the machine's /usr/bin/node), `npm start` and
// `npm test` run on Node 24 brought from the npm registry into .tools/. Each command runs with `env -i` and
// the machine's PATH alone, so no node of this test run leaks in.
import { execFile } from 'node:child_process';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import t from 'tap';
import { privateCopy } from './npm-start.js';

const execFileAsync = promisify(execFile);
const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const MACHINE_PATH = '/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin';
// What scripts/node.mjs says (read, not imported: scripts are their own unit).
const launcher = readFileSync(join(ROOT, 'scripts', 'node.mjs'), 'utf8');
const BROUGHT_VERSION = launcher.match(/BROUGHT_VERSION = '([\d.]+)'/)![1]!;
const isSupported = (version: string) => [22, 24].includes(Number(version.split('.')[0]));
t.match(launcher, 'SUPPORTED_MAJORS = [22, 24]', 'the lines the launcher supports');
t.setTimeout(600_000);

/** Runs `args` in `cwd` with only the machine's PATH (and a HOME); resolves with the whole output and exit code. */
async function machine(cwd: string, args: string[], env: Record<string, string> = {}): Promise<{ code: number; out: string }> {
  const vars = Object.entries({ PATH: MACHINE_PATH, HOME: process.env.HOME ?? '/root', ...env }).map(([k, v]) => `${k}=${v}`);
  return execFileAsync('env', ['-i', ...vars, ...args], { cwd, maxBuffer: 64 << 20 }).then(
    (r) => ({ code: 0, out: r.stdout + r.stderr }),
    (err: { code?: number; stdout?: string; stderr?: string }) => ({ code: err.code ?? 1, out: `${err.stdout ?? ''}${err.stderr ?? ''}` }),
  );
}

const machineNode = (await machine(ROOT, ['node', '-p', 'process.versions.node'])).out.trim();
const expected = isSupported(machineNode) ? machineNode : BROUGHT_VERSION;
t.comment(`the machine's node: ${machineNode}; the project runs on ${expected}`);

const bringing = { skip: isSupported(machineNode) ? `the machine's Node.js ${machineNode} is supported: nothing to bring` : false };
t.test('the launcher brings Node 24 from the npm registry when the machine has another line', bringing, async (t) => {
  const root = privateCopy(t);
  rmSync(join(root, '.tools', `node-${BROUGHT_VERSION}`), { recursive: true, force: true });
  const r = await machine(root, ['node', 'scripts/node.mjs', 'node', '-p', 'process.versions.node + " " + process.execPath']);
  t.equal(r.code, 0, r.out);
  t.match(r.out, `Node.js ${machineNode} is not a supported line (22 or 24); installing Node.js ${BROUGHT_VERSION}`);
  t.match(r.out, `${BROUGHT_VERSION} ${join(root, '.tools')}`, 'runs the brought binary');
  t.ok(
    existsSync(join(root, '.tools', `node-${BROUGHT_VERSION}`, 'node_modules', `node-${process.platform}-${process.arch}`, 'bin', 'node')),
  );
  const again = await machine(root, ['node', 'scripts/node.mjs', 'node', '-p', 'process.versions.node']);
  t.equal(again.out.trim(), BROUGHT_VERSION, 'once: the second run uses it without installing');
});

t.test('npm test runs the suite on the supported node', async (t) => {
  // In a copy: a tap run inside this repository would share (and clear) the running suite's .tap folder.
  const r = await machine(privateCopy(t), ['npm', 'test', '--', 'tests/e2e/fixtures/node-version.ts']);
  t.equal(r.code, 0, r.out);
  t.match(r.out, `# node ${expected}`);
});

t.test('npm start runs the gateway on the supported node', async (t) => {
  // Servers that are not there: it says which node it runs on, then fails at the migration, quickly.
  const r = await machine(privateCopy(t), ['npm', 'start'], {
    DATABASE_URL: 'postgres://postgres@127.0.0.1:1/none',
    NATS_URL: 'nats://127.0.0.1:1',
  });
  t.not(r.code, 0, 'no database: it stops');
  t.match(r.out, `[start] Node.js ${expected} (`);
});
