// `npm start` where no PostgreSQL and no NATS answer: it starts an embedded PostgreSQL and nats-server,
// runs the gateway on them, stops every process on Ctrl-C, and finds its data again on the next start.
import { chmodSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { ADMIN_TOKEN, answers, portsFrom, startScript, stop } from './npm-start.js';

// Whole-gateway starts from cold sources take tens of seconds on a loaded machine.
t.setTimeout(360_000);
const ports = portsFrom(16100);
const asRoot = process.getuid?.() === 0;

t.test(`npm start as ${asRoot ? 'root' : 'an ordinary user'}: embedded servers, data kept between starts`, async (t) => {
  t.notOk(await answers(ports.pgProbe), 'nothing answers on the PostgreSQL probe port');
  t.notOk(await answers(ports.natsProbe), 'nothing answers on the NATS probe port');
  const dataDir = tempDir(t);

  const first = startScript(t, ports, dataDir);
  await first.waitFor(/gateway ready/);
  const [, walletId] = await first.waitFor(/demo key \(shown once, wallet (\S+) with 10000 cents\)/);
  t.match(first.output(), `starting an embedded one on ${ports.pg}`);
  t.match(first.output(), `NATS: starting`);
  t.ok(existsSync(join(dataDir, 'postgres', 'PG_VERSION')), 'the cluster lives in the data dir');
  t.equal(await stop(first), 0, 'Ctrl-C stops it cleanly');
  t.notOk(await answers(ports.pg), 'the embedded PostgreSQL stopped');
  t.notOk(await answers(ports.nats), 'nats-server stopped');
  t.notOk(await answers(ports.http), 'the control plane stopped');
  t.notOk(existsSync(join(dataDir, 'postgres', 'postmaster.pid')), 'PostgreSQL shut down, not killed');

  const second = startScript(t, ports, dataDir);
  await second.waitFor(/gateway ready/);
  const res = await fetch(`http://127.0.0.1:${ports.http}/admin/v1/wallets/${walletId}`, {
    headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
  });
  t.equal(res.status, 200, 'the first start’s wallet is still there');
  t.match(await res.json(), { id: walletId, balance_cents: 10_000 });
  t.equal(await stop(second), 0);
  t.notOk(await answers(ports.pg), 'the embedded PostgreSQL stopped again');
});

t.test('a failure prints its real cause, the server’s own words included, and exits non-zero', async (t) => {
  const dataDir = tempDir(t);
  // Not a cluster and not empty: initdb refuses it.
  mkdirSync(join(dataDir, 'postgres'), { mode: 0o700 });
  writeFileSync(join(dataDir, 'postgres', 'stray'), 'x');
  const run = startScript(t, ports, dataDir);
  t.equal(await run.exited, 1, 'exits non-zero');
  t.match(run.output(), /\[start\] failed: initdb failed/);
  t.match(run.output(), /initdb: error: directory .* exists but is not empty/, "initdb's own output");
  t.notMatch(run.output(), /undefined/);
});

/** A data dir under the temp dir; the server's OS user (when we are root) must be able to enter it. */
function tempDir(t: { teardown(fn: () => unknown): void }): string {
  const dir = mkdtempSync(join(tmpdir(), 's2s-start-'));
  chmodSync(dir, 0o755);
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}
