// `npm start` where no PostgreSQL and no NATS answer: it starts an embedded PostgreSQL and nats-server,
// runs the gateway on them behind one public origin, stops every process on Ctrl-C, and finds its data
// again on the next start (that one with TLS and two relays). The workspace and the data dir are in folders
// of mode 0700, as a fresh clone under /root or in `mktemp -d` is: as root, the server's OS user `postgres`
// cannot enter them, so its binaries and cluster go to the folder it owns (S2S_EMBEDDED_PG_HOME).
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import https from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { selfSignedCertificate } from '@s2s/testing';
import WebSocket from 'ws';
import { ADMIN_TOKEN, answers, identityOf, portsFrom, privateCopy, startScript, stop } from './npm-start.js';

// Whole-gateway starts from cold sources take tens of seconds on a loaded machine.
t.setTimeout(360_000);
const ports = portsFrom(16100);
const asRoot = process.getuid?.() === 0;

t.test(`npm start as ${asRoot ? 'root' : 'an ordinary user'} in a 0700 folder: embedded servers, data kept between starts`, async (t) => {
  t.notOk(await answers(ports.pgProbe), 'nothing answers on the PostgreSQL probe port');
  t.notOk(await answers(ports.natsProbe), 'nothing answers on the NATS probe port');
  const root = privateCopy(t);
  const dataDir = tempDir(t);
  const pgHome = pgHomeFor(t);
  const env = { S2S_EMBEDDED_PG_HOME: pgHome };

  const first = startScript(t, ports, dataDir, { root, env });
  await first.waitFor(/gateway ready/);
  const [, walletId, demoKey] = await first.waitFor(/demo key \(shown once, wallet (\S+) with 10000 cents\): (\S+)/);
  t.match(first.output(), `starting an embedded one on ${ports.pg}`);
  t.match(first.output(), `NATS: starting`);
  const [, clusterDir] = first.output().match(/PostgreSQL: data in (\S+)/) ?? [];
  if (asRoot) {
    t.match(clusterDir, new RegExp(`^${pgHome}/data/postgres-[0-9a-f]{12}$`), 'as root, the cluster is in the postgres user’s folder');
    t.match(first.output(), `the OS user postgres cannot reach ${join(dataDir, 'postgres')}`, 'and says why');
    t.equal(statSync(clusterDir!).uid, identityOf('postgres').uid, 'owned by postgres');
    t.ok(
      readdirSync(pgHome).some((e) => /^bin-/.test(e)),
      'the server runs from a copy of its binaries there (the workspace’s are out of its reach)',
    );
  } else {
    t.equal(clusterDir, join(dataDir, 'postgres'), 'the cluster lives in the data dir');
  }
  t.ok(existsSync(join(clusterDir!, 'PG_VERSION')), 'a cluster');
  for (const dir of [join(root, '..'), dataDir]) t.equal(statSync(dir).mode & 0o777, 0o700, `${dir} keeps mode 0700`);
  await oneOrigin(t, `http://127.0.0.1:${ports.http}`, demoKey!, {});
  t.equal(await stop(first), 0, 'Ctrl-C stops it cleanly');
  t.notOk(await answers(ports.pg), 'the embedded PostgreSQL stopped');
  t.notOk(await answers(ports.nats), 'nats-server stopped');
  t.notOk(await answers(ports.http), 'the control plane stopped');
  t.notOk(existsSync(join(clusterDir!, 'postmaster.pid')), 'PostgreSQL shut down, not killed');

  const tls = selfSignedCertificate(dataDir);
  const second = startScript(t, ports, dataDir, {
    root,
    env: { ...env, TLS_CERT_FILE: tls.cert, TLS_KEY_FILE: tls.key, RELAY_COUNT: '2' },
  });
  await second.waitFor(/gateway ready: HTTP API https:/);
  t.match(second.output(), `PostgreSQL: data in ${clusterDir}`, 'the same cluster again');
  const [, secondKey] = await second.waitFor(/demo key \(shown once, [^)]*\): (\S+)/);
  const ca = readFileSync(tls.cert);
  const wallet = await httpsJson(`https://127.0.0.1:${ports.http}/admin/v1/wallets/${walletId}`, ca, {
    authorization: `Bearer ${ADMIN_TOKEN}`,
  });
  t.equal(wallet.status, 200, 'the first start’s wallet is still there (over https)');
  t.match(wallet.body, { id: walletId, balance_cents: 10_000 });
  await oneOrigin(t, `https://127.0.0.1:${ports.http}`, secondKey!, { ca });
  t.equal(await stop(second), 0);
  t.notOk(await answers(ports.pg), 'the embedded PostgreSQL stopped again');
});

t.test('a failure prints its real cause, the server’s own words included, and exits non-zero', async (t) => {
  const dataDir = tempDir(t);
  // S2S_EMBEDDED_PG_DIR is used as given: not a cluster and not empty, so initdb refuses it.
  chmodSync(dataDir, 0o755);
  mkdirSync(join(dataDir, 'cluster'), { mode: 0o700 });
  writeFileSync(join(dataDir, 'cluster', 'stray'), 'x');
  const run = startScript(t, ports, dataDir, {
    env: { S2S_EMBEDDED_PG_DIR: join(dataDir, 'cluster'), S2S_EMBEDDED_PG_HOME: pgHomeFor(t) },
  });
  t.equal(await run.exited, 1, 'exits non-zero');
  t.match(run.output(), /\[start\] failed: initdb failed/);
  t.match(run.output(), /initdb: error: directory .* exists but is not empty/, "initdb's own output");
  t.notMatch(run.output(), /undefined/);
});

t.test(
  'as root, an S2S_EMBEDDED_PG_DIR the postgres user cannot reach is refused, naming it',
  { skip: asRoot ? false : 'only root hands the server to another user' },
  async (t) => {
    const dataDir = tempDir(t);
    const run = startScript(t, ports, dataDir, {
      env: { S2S_EMBEDDED_PG_DIR: join(dataDir, 'cluster'), S2S_EMBEDDED_PG_HOME: pgHomeFor(t) },
    });
    t.equal(await run.exited, 1, 'exits non-zero');
    t.match(
      run.output(),
      `[start] failed: PostgreSQL cannot run as root, so the embedded server runs as the OS user "postgres", which cannot reach ${dataDir}`,
    );
    t.notOk(existsSync(join(dataDir, 'cluster')), 'nothing made there');
    t.equal(statSync(dataDir).mode & 0o777, 0o700, 'its mode unchanged');
  },
);

/** A data dir of mode 0700 under the temp dir, as `mktemp -d` makes. */
function tempDir(t: { teardown(fn: () => unknown): void }): string {
  const dir = mkdtempSync(join(tmpdir(), 's2s-start-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** A not yet existing S2S_EMBEDDED_PG_HOME in the (world-enterable) temp dir: start.mjs makes it for postgres. */
function pgHomeFor(t: { teardown(fn: () => unknown): void }): string {
  const dir = join(tmpdir(), `s2s-pghome-${process.pid}-${Math.random().toString(36).slice(2, 10)}`);
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** One request over http or https (trusting `ca`), JSON in and out. */
function httpsJson(
  url: string,
  ca: Buffer | undefined,
  headers: Record<string, string>,
  body?: unknown,
): Promise<{ status: number; body: any }> {
  return new Promise((resolve, reject) => {
    const req = https.request(
      url,
      { method: body === undefined ? 'GET' : 'POST', ca, headers: { ...headers, 'content-type': 'application/json' } },
      (res) => {
        let text = '';
        res.on('data', (c) => (text += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) }));
      },
    );
    req.on('error', reject);
    req.end(body === undefined ? undefined : JSON.stringify(body));
  });
}

/** The HTTP API and the realtime socket on one origin: the session names it, and attaching there works. */
async function oneOrigin(t: Test, base: string, key: string, opts: { ca?: Buffer }): Promise<void> {
  const headers = { authorization: `Bearer ${key}` };
  const body = { model: 'local/echo-1', mode: 'speech_to_speech' };
  const created = base.startsWith('https')
    ? await httpsJson(`${base}/v1/voice/sessions`, opts.ca, headers, body)
    : await fetch(`${base}/v1/voice/sessions`, {
        method: 'POST',
        headers: { ...headers, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      }).then(async (r) => ({ status: r.status, body: await r.json() }));
  t.equal(created.status, 201, `${base}: a session`);
  const url = new URL(created.body.realtime.url);
  t.equal(url.origin.replace(/^ws/, 'http'), base, `${base}: realtime.url names the same origin`);
  const ws = new WebSocket(url, 'svc-realtime-v1', { headers, ca: opts.ca });
  const first = await new Promise<any>((resolve, reject) => {
    ws.once('message', (data) => resolve(JSON.parse(String(data))));
    ws.once('error', reject);
  });
  t.match(first, { type: 'session.created', session: { id: created.body.id } }, `${base}: attached through the edge`);
  ws.close();
}
