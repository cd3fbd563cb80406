// `npm start` run by an ordinary user where no PostgreSQL and no NATS answer (the embedded-servers test
// covers root when the suite runs as root; this one switches to `nobody`, which needs root to do).
import { chmodSync, chownSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execFileSync } from 'node:child_process';
import t from 'tap';
import { answers, portsFrom, startScript, stop } from './npm-start.js';

// Whole-gateway starts from cold sources take tens of seconds on a loaded machine.
t.setTimeout(360_000);
// Clear of npm-start-embedded (16100–16108, and its second relay at 16205: start.mjs puts relay i on RELAY_PORT + 100 i),
// which tap may run at the same time.
const ports = portsFrom(16400);
const asRoot = process.getuid?.() === 0;
const USER = 'nobody';

t.test(`npm start as the ordinary user ${USER}`, { skip: asRoot ? false : 'switching users needs root' }, async (t) => {
  const uid = Number(execFileSync('id', ['-u', USER], { encoding: 'utf8' }));
  const gid = Number(execFileSync('id', ['-g', USER], { encoding: 'utf8' }));
  t.notOk(await answers(ports.pgProbe), 'nothing answers on the PostgreSQL probe port');
  const dataDir = mkdtempSync(join(tmpdir(), 's2s-start-user-'));
  chmodSync(dataDir, 0o755);
  chownSync(dataDir, uid, gid);
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));

  const run = startScript(t, ports, dataDir, { uid, gid });
  await run.waitFor(/gateway ready/);
  await run.waitFor(/demo key \(shown once/);
  t.match(run.output(), `starting an embedded one on ${ports.pg}`);
  t.ok(existsSync(join(dataDir, 'postgres', 'PG_VERSION')), 'the cluster lives in the data dir');
  t.equal(await stop(run), 0, 'Ctrl-C stops it cleanly');
  t.notOk(await answers(ports.pg), 'the embedded PostgreSQL stopped');
  t.notOk(await answers(ports.nats), 'nats-server stopped');
});
