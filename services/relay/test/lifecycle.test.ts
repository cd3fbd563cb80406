import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { requestEnd } from '@s2s/sessions';
import {
  attach,
  attachUrl,
  createKey,
  createModel,
  eventually,
  newSession,
  refused,
  sessionRow,
  setupRelay,
  streamEchoed,
  tone,
} from './helpers.js';

t.test('an end requested while streaming: upstream stopped, final checkpoint, close 1000', async (t) => {
  const env = await setupRelay(t);
  await createModel(env.db, { id: 'local/echo', providerModel: 'echo-stream' });
  const key = await createKey(env.db, 10_000);
  const s = await newSession(env.db, key, 'local/echo');
  const { client } = await attach(attachUrl(env.url, s.id), key.secret);
  await streamEchoed(client, 400);
  await requestEnd({ ctx: { db: env.db, bus: env.bus }, input: { sessionId: s.id, cause: 'client_closed' } });
  const closed = await client.closed;
  t.equal(closed.code, 1000);
  const final = await eventually(
    () => env.checkpoints.find((c) => c.session_id === s.id && c.final),
    (c) => c !== undefined,
  );
  t.match(final, { audio_in_ms: 400, audio_out_ms: 400, final: true });
  t.equal(
    await eventually(
      () => env.sim.connections(),
      (n) => n === 0,
    ),
    0,
    'upstream closed',
  );
  const again = await refusedStatus(env.url, s.id, key.secret);
  t.equal(again, 410, 'an ended session cannot be attached again');
});

t.test('takeover across relays (4001) and reconnect', async (t) => {
  const env = await setupRelay(t);
  const other = await env.startRelay();
  await createModel(env.db, { id: 'local/echo', providerModel: 'echo-stream' });
  const key = await createKey(env.db, 10_000);
  const s = await newSession(env.db, key, 'local/echo');

  const first = await attach(attachUrl(env.url, s.id), key.secret);
  first.client.append(tone(20));
  await first.client.next('response.output_audio.delta');

  const second = await attach(attachUrl(other.url, s.id), key.secret);
  const closed = await first.client.closed;
  t.equal(closed.code, 4001, 'the older attachment is replaced');
  const atts = await env.db.pool.query<{ id: string; relay_id: string }>(
    'SELECT id, relay_id FROM session_attachments WHERE session_id = $1 ORDER BY started_at',
    [s.id],
  );
  t.equal(atts.rows.length, 2);
  t.not(atts.rows[0]?.relay_id, atts.rows[1]?.relay_id, 'two relays');
  const firstFinal = await eventually(
    () => env.checkpoints.find((c) => c.attachment_id === atts.rows[0]?.id && c.final),
    (c) => c !== undefined,
  );
  t.match(firstFinal, { audio_in_ms: 20, audio_out_ms: 20 }, 'the replaced attachment published its final usage');

  second.client.append(tone(40));
  const d = await second.client.next('response.output_audio.delta');
  t.equal((d.audio as string).length, tone(40).toString('base64').length, 'the new attachment streams');
  t.equal(second.client.closeCode, null);

  // Dropping the socket leaves the session attachable: reconnect to the first relay.
  second.client.ws.terminate();
  await eventually(
    () => env.checkpoints.find((c) => c.attachment_id === atts.rows[1]?.id && c.final),
    (c) => c !== undefined,
  );
  t.equal((await sessionRow(env.db, s.id))?.end_requested_at, null);
  const third = await attach(attachUrl(env.url, s.id), key.secret);
  t.equal((third.created.session as { status: string }).status, 'active');
  third.client.append(tone(20));
  await third.client.next('response.output_audio.delta');

  // Same relay, newer attachment: the older one is replaced too.
  const fourth = await attach(attachUrl(env.url, s.id), key.secret);
  t.equal((await third.client.closed).code, 4001);
  await fourth.client.close();
});

t.test('a takeover the bus missed is caught by the periodic reconcile', async (t) => {
  const env = await setupRelay(t, { RECONCILE_INTERVAL_MS: '100' });
  await createModel(env.db, { id: 'local/echo', providerModel: 'echo-stream' });
  const key = await createKey(env.db, 10_000);
  const s = await newSession(env.db, key, 'local/echo');
  const first = await attach(attachUrl(env.url, s.id), key.secret);
  // A newer attachment recorded by a relay whose announcement never arrived.
  await env.db.pool.query(
    `INSERT INTO session_attachments (id, session_id, relay_id, started_at) VALUES ('att_zzz', $1, 'elsewhere', now() + interval '1 second')`,
    [s.id],
  );
  t.equal((await first.client.closed).code, 4001);
});

t.test('upstream unavailable at open: upstream_unavailable, session failed, close 1011', async (t) => {
  const env = await setupRelay(t);
  const dead = await env.startRelay({ LOCAL_PROVIDER_URL: 'ws://127.0.0.1:9/v1/realtime', PROVIDER_CONNECT_TIMEOUT_MS: '500' });
  await createModel(env.db, { id: 'local/echo', providerModel: 'echo-stream' });
  const key = await createKey(env.db, 10_000);
  const s = await newSession(env.db, key, 'local/echo');
  const { client } = await attach(attachUrl(dead.url, s.id), key.secret);
  client.append(tone(20));
  const err = await client.next('error');
  t.same(err.error, {
    type: 'service_unavailable_error',
    code: 'upstream_unavailable',
    message: 'The model is unavailable; the session has ended.',
  });
  t.notMatch(JSON.stringify(err), /127\.0\.0\.1|:9\b|ECONNREFUSED/, 'no provider address in the error');
  t.equal((await client.closed).code, 1011);
  const row = await eventually(
    () => sessionRow(env.db, s.id),
    (r) => r?.end_cause != null,
  );
  t.equal(row?.end_cause, 'upstream_failure');
  t.equal(row?.terminal_status, 'failed');
  const final = await eventually(
    () => env.checkpoints.find((c) => c.session_id === s.id && c.final),
    (c) => c !== undefined,
  );
  t.match(final, { audio_in_ms: 0, audio_out_ms: 0 }, 'a frame held while opening is never billed');
});

t.test('upstream lost mid-stream and not re-established: upstream_unavailable, close 1011, the produced audio billed', async (t) => {
  const env = await setupRelay(t);
  await createModel(env.db, { id: 'local/echo', providerModel: 'echo-stream' });
  const key = await createKey(env.db, 10_000);
  const s = await newSession(env.db, key, 'local/echo');
  const { client } = await attach(attachUrl(env.url, s.id), key.secret);
  client.append(tone(100));
  await client.next('response.output_audio.delta');
  // A lost connection is replaced (continuity.test.ts); an outage of the provider ends the session.
  env.sim.refuseConnections(true);
  env.sim.terminateConnections();
  const err = await client.next('error');
  t.equal((err.error as { code: string }).code, 'upstream_unavailable');
  t.equal((await client.closed).code, 1011);
  const final = await eventually(
    () => env.checkpoints.find((c) => c.session_id === s.id && c.final),
    (c) => c !== undefined,
  );
  t.match(final, { audio_in_ms: 100, audio_out_ms: 100, output_audio_tokens: 2 });
  t.equal((await sessionRow(env.db, s.id))?.terminal_status, 'failed');
});

t.test('draining: probes say so, new attaches are refused with 503, held sockets get 1012', async (t) => {
  const env = await setupRelay(t);
  await createModel(env.db, { id: 'local/echo', providerModel: 'echo-stream' });
  const key = await createKey(env.db, 10_000);
  const s = await newSession(env.db, key, 'local/echo');
  const { client } = await attach(attachUrl(env.url, s.id), key.secret);
  const http = env.url.replace('ws:', 'http:').replace('/v1/realtime', '');
  await env.app.relay.drain();
  t.equal((await client.closed).code, 1012);
  const ready = await fetch(`${http}/readyz`);
  t.equal(ready.status, 503);
  t.same(await ready.json(), { status: 'draining' });
  const health = await fetch(`${http}/healthz`);
  t.equal(health.status, 200);
  t.same(await health.json(), { status: 'draining' });
  const r = await refused(attachUrl(env.url, s.id), { secret: key.secret });
  t.equal(r.status, 503);
  t.equal(r.body.error.code, 'service_unavailable');
  t.equal(r.headers['retry-after'], '1');
  const { rows } = await env.db.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM session_attachments WHERE session_id = $1', [
    s.id,
  ]);
  t.equal(rows[0]?.n, 1, 'the refused attach recorded nothing');
});

t.test('SIGTERM drain: final checkpoints, 1012, exit', async (t) => {
  const env = await setupRelay(t);
  await createModel(env.db, { id: 'local/echo', providerModel: 'echo-stream' });
  const key = await createKey(env.db, 10_000);
  const s1 = await newSession(env.db, key, 'local/echo');
  const s2 = await newSession(env.db, key, 'local/echo');

  const main = fileURLToPath(new URL('../src/main.ts', import.meta.url));
  const child = spawn(process.execPath, ['--import', 'tsx', main], {
    env: {
      ...process.env,
      NODE_ENV: 'test',
      DATABASE_URL: env.dbUrl,
      BUS_PREFIX: env.bus.subjects.stream.replace(/_EVENTS$/, '').toLowerCase(),
      RELAY_PORT: '0',
      RELAY_ID: 'relay-child',
      LOCAL_PROVIDER_URL: env.sim.url,
      LOG_LEVEL: 'info',
      DRAIN_TIMEOUT_MS: '5000',
      OTEL_SDK_DISABLED: 'true',
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  t.teardown(() => {
    if (child.exitCode === null) child.kill('SIGKILL');
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  let out = '';
  const port = await new Promise<number>((resolve, reject) => {
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const m = /"port":(\d+)[^\n]*"relay listening"|"relay listening"[^\n]*"port":(\d+)/.exec(out);
      if (m) resolve(Number(m[1] ?? m[2]));
    });
    child.once('exit', () => reject(new Error(`relay exited early: ${out}`)));
  });
  const url = `ws://127.0.0.1:${port}/v1/realtime`;
  const a = await attach(attachUrl(url, s1.id), key.secret);
  const b = await attach(attachUrl(url, s2.id), key.secret);
  a.client.append(tone(60));
  b.client.append(tone(80));
  await a.client.next('response.output_audio.delta');
  await b.client.next('response.output_audio.delta');

  child.kill('SIGTERM');
  t.equal((await a.client.closed).code, 1012);
  t.equal((await b.client.closed).code, 1012);
  t.equal(await exited, 0, 'exited cleanly');
  const finals = await eventually(
    () => env.checkpoints.filter((c) => c.final && c.relay_id === 'relay-child'),
    (c) => c.length === 2,
  );
  t.same(
    finals.map((c) => [c.session_id, c.audio_in_ms, c.audio_out_ms]).sort(),
    [
      [s1.id, 60, 60],
      [s2.id, 80, 80],
    ].sort(),
  );
  t.equal((await sessionRow(env.db, s1.id))?.end_requested_at, null, 'draining does not end sessions');
});

async function refusedStatus(url: string, sessionId: string, secret: string): Promise<number> {
  return (await refused(attachUrl(url, sessionId), { secret })).status;
}
