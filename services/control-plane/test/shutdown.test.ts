import t from 'tap';
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { request } from 'node:http';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { connectBus } from '@s2s/bus';
import { busSubjects } from '@s2s/contract';
import { createTestDatabase } from '@s2s/db/testing';
import { api } from './helpers.js';

const serviceDir = fileURLToPath(new URL('..', import.meta.url));

t.test('main.ts: seeds, listens, and on SIGTERM finishes the in-flight request, refuses new ones, exits 0', async (t) => {
  const testDb = await createTestDatabase(t);
  const prefix = `t_${randomBytes(4).toString('hex')}`;
  t.teardown(async () => {
    const bus = await connectBus({ url: 'nats://127.0.0.1:4222', prefix });
    await bus.jsm.streams.delete(busSubjects(prefix).stream).catch(() => {});
    await bus.close();
  });
  const child = spawn(process.execPath, ['--import', 'tsx', '--import', '@s2s/telemetry/register', 'src/main.ts'], {
    cwd: serviceDir,
    env: {
      ...process.env,
      NODE_ENV: 'development',
      DATABASE_URL: testDb.url,
      BUS_PREFIX: prefix,
      HTTP_PORT: '0',
      LOG_LEVEL: 'info',
      ADMIN_TOKEN: '',
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  t.teardown(() => {
    if (child.exitCode === null) child.kill('SIGKILL');
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const lines: Record<string, any>[] = [];
  const waiters: [string, (line: Record<string, any>) => void][] = [];
  createInterface({ input: child.stdout! }).on('line', (text) => {
    const line = JSON.parse(text) as Record<string, any>;
    lines.push(line);
    for (const [msg, resolve] of waiters) if (line.msg === msg) resolve(line);
  });
  const logged = (msg: string) =>
    new Promise<Record<string, any>>((resolve) => {
      const found = lines.find((l) => l.msg === msg);
      if (found) resolve(found);
      else waiters.push([msg, resolve]);
    });

  const listening = await logged('control plane listening');
  const base = { url: `http://127.0.0.1:${listening.port}` };
  t.equal(listening.host, '127.0.0.1');
  t.ok(lines.some((l) => l.msg === 'default catalog seeded'));
  const devToken = lines.find((l) => l.msg === 'operator API uses the development admin token (ADMIN_TOKEN unset)');
  t.equal(devToken?.dev_admin_token, 'dev-admin-token', 'development prints the token in use');
  t.same(
    (await api(base, 'GET', '/v1/models')).body.data.map((m: { id: string }) => m.id),
    ['local/echo-1'],
  );
  const key = await api(base, 'POST', '/admin/v1/keys', {
    headers: { authorization: 'Bearer dev-admin-token' },
    json: { balance_cents: 1000 },
  });
  t.equal(key.status, 201);

  // A request whose body is still arriving when SIGTERM comes.
  const body = JSON.stringify({ model: 'local/echo-1', mode: 'speech_to_speech' });
  const inFlight = request({
    host: '127.0.0.1',
    port: listening.port,
    method: 'POST',
    path: '/v1/voice/sessions',
    agent: false,
    headers: { authorization: `Bearer ${key.body.key}`, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
  });
  const answered = new Promise<{ status: number; text: string }>((resolve, reject) => {
    inFlight.on('response', (res) => {
      let text = '';
      res.on('data', (c) => (text += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
    });
    inFlight.on('error', reject);
  });
  inFlight.write(body.slice(0, 10));
  await new Promise((r) => setTimeout(r, 100));

  child.kill('SIGTERM');
  await logged('shutting down');
  await t.rejects(fetch(`${base.url}/healthz`), 'new connections are refused');
  inFlight.end(body.slice(10));
  const res = await answered;
  t.equal(res.status, 201, 'the in-flight request completed');
  t.equal(JSON.parse(res.text).status, 'ready');
  t.equal(await exited, 0);
  t.ok(lines.some((l) => l.msg === 'shut down'));
  t.notOk(JSON.stringify(lines).includes(key.body.key), 'no key in the log');
  const { rows } = await testDb.db.pool.query('SELECT count(*)::int AS n FROM voice_sessions');
  t.equal(rows[0].n, 1);
});
