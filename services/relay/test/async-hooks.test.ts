// The relay never enters AsyncLocalStorage (issue 9): on Node 20 the first `run` or `enterWith` turns on an
// async_hooks init hook and promise hooks for the life of the process, a cost on every promise, nextTick and
// socket write of every frame after it. Telemetry is started as main.ts starts it (OpenTelemetry's
// AsyncLocalStorage context manager registered, no exporter); every entry into AsyncLocalStorage is recorded
// while a session attaches, streams, checkpoints and ends, a legacy socket comes and goes, and an attach is refused.
import { AsyncLocalStorage } from 'node:async_hooks';
import { context, startTelemetry } from '@s2s/telemetry';
import t from 'tap';
import WebSocket from 'ws';
import { attach, attachUrl, createKey, createModel, eventually, newSession, refused, setupRelay, sleep, streamEchoed } from './helpers.js';

const entered: string[] = [];
const wrap = <K extends 'run' | 'enterWith'>(name: K) => {
  const original = AsyncLocalStorage.prototype[name];
  AsyncLocalStorage.prototype[name] = function (this: AsyncLocalStorage<unknown>, ...args: unknown[]) {
    const limit = Error.stackTraceLimit;
    Error.stackTraceLimit = 30;
    entered.push(`AsyncLocalStorage.${name}\n${new Error().stack ?? ''}`);
    Error.stackTraceLimit = limit;
    return (original as (...a: unknown[]) => unknown).apply(this, args);
  } as (typeof AsyncLocalStorage.prototype)[K];
  return () => {
    AsyncLocalStorage.prototype[name] = original;
  };
};

t.test('attach, frames, checkpoints, end, a legacy socket and a refusal: no AsyncLocalStorage entered', async (t) => {
  const telemetry = startTelemetry({ serviceName: 'relay', ownHttpServerSpans: true, env: {} });
  t.teardown(() => telemetry.shutdown());
  t.teardown(wrap('run'));
  t.teardown(wrap('enterWith'));

  const env = await setupRelay(t);
  await createModel(env.db, { id: 'local/echo', providerModel: 'echo-stream' });
  const key = await createKey(env.db, 10_000);
  const s = await newSession(env.db, key, 'local/echo');

  // A session streams long enough for several acknowledged checkpoints (100 ms apart here), then leaves.
  const { client } = await attach(attachUrl(env.url, s.id), key.secret);
  await streamEchoed(client, 600);
  await eventually(
    () => env.checkpoints.filter((c) => c.session_id === s.id).length,
    (n) => n >= 2,
  );
  client.close();
  await eventually(
    () => env.checkpoints.find((c) => c.session_id === s.id && c.final),
    (c) => c !== undefined,
  );

  // The legacy path: a session made by the upgrade, ended by the relay when its socket closes.
  const legacy = new WebSocket(`${env.url}?model=local/echo`, ['realtime'], {
    headers: { Authorization: `Bearer ${key.secret}` },
    perMessageDeflate: false,
  });
  await new Promise<void>((resolve, reject) => {
    legacy.once('open', () => resolve());
    legacy.once('error', reject);
  });
  await sleep(100);
  legacy.close();
  await eventually(
    () => env.endRequests.length,
    (n) => n >= 1,
  );

  const refusal = await refused(attachUrl(env.url, s.id), { secret: 'vr_sk_not_a_key' });
  t.equal(refusal.status, 401, 'a bad key is refused');

  t.same(entered, [], 'nothing entered AsyncLocalStorage');
  // The check itself sees an entry: the context manager registered above is AsyncLocalStorage's. Node 24's
  // AsyncLocalStorage makes its `run` of calls to itself (one entry on Node 20, more on 24): at least one is seen.
  context.with(context.active(), () => {});
  t.ok(entered.length >= 1, 'a context.with is seen');
  t.ok(entered[0]?.startsWith('AsyncLocalStorage.'), 'recorded as an AsyncLocalStorage entry');
});
