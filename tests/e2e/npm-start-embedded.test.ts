// `npm start` where no PostgreSQL and no NATS answer: it starts an embedded PostgreSQL and nats-server,
// runs the gateway on them behind one public origin, stops every process on Ctrl-C, and finds its data
// again on the next start (that one with TLS and two relays).
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import https from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { selfSignedCertificate } from '@s2s/testing';
import WebSocket from 'ws';
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
  const [, walletId, demoKey] = await first.waitFor(/demo key \(shown once, wallet (\S+) with 10000 cents\): (\S+)/);
  t.match(first.output(), `starting an embedded one on ${ports.pg}`);
  t.match(first.output(), `NATS: starting`);
  t.ok(existsSync(join(dataDir, 'postgres', 'PG_VERSION')), 'the cluster lives in the data dir');
  await oneOrigin(t, `http://127.0.0.1:${ports.http}`, demoKey!, {});
  t.equal(await stop(first), 0, 'Ctrl-C stops it cleanly');
  t.notOk(await answers(ports.pg), 'the embedded PostgreSQL stopped');
  t.notOk(await answers(ports.nats), 'nats-server stopped');
  t.notOk(await answers(ports.http), 'the control plane stopped');
  t.notOk(existsSync(join(dataDir, 'postgres', 'postmaster.pid')), 'PostgreSQL shut down, not killed');

  const tls = selfSignedCertificate(dataDir);
  const second = startScript(t, ports, dataDir, {}, { TLS_CERT_FILE: tls.cert, TLS_KEY_FILE: tls.key, RELAY_COUNT: '2' });
  await second.waitFor(/gateway ready: HTTP API https:/);
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
