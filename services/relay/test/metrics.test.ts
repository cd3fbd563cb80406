// The relay's own series on its scrape: connect retries counted as upstream reconnects, a failed connect
// by its error kind, refusals by code, frames and active sessions back to zero when the socket is gone.
import t from 'tap';
import { attach, attachUrl, createKey, createModel, eventually, newSession, refused, series, setupRelay } from './helpers.js';

t.test('an upstream that refuses connections: each retry is a reconnect, the failed connect is timed with its kind', async (t) => {
  const env = await setupRelay(t);
  await createModel(env.db, { id: 'local/echo', providerModel: 'echo-stream' });
  const key = await createKey(env.db, 10_000);
  const s = await newSession(env.db, key, 'local/echo');
  env.sim.refuseConnections(true);
  const { client } = await attach(attachUrl(env.url, s.id), key.secret);
  // The upstream opens at the client's first event (its settings go into the opening configuration).
  client.send({ type: 'session.update', session: { voice: 'alloy' } });
  const closed = await client.closed;
  t.not(closed.code, 1000, 'the attachment failed');
  const page = await eventually(
    () => env.metrics.scrape(),
    (p) => series(p, 's2s_relay_active_sessions') === 0,
  );
  t.ok(series(page, 's2s_relay_upstream_reconnects_total', { gen_ai_provider_name: 'local' }) >= 1, 'reconnects counted');
  t.match(page, /s2s_relay_upstream_connect_duration_count\{[^}]*error_type="/, 'the failed connect carries error.type');
  t.equal(series(page, 's2s_relay_attaches_total'), 1, 'one attach');
  t.ok(
    series(page, 's2s_relay_frames_total', { network_io_direction: 'transmit', gen_ai_provider_name: 'local' }) >= 2,
    'session and conversation events sent, counted for the provider serving the session',
  );
  t.equal(series(page, 's2s_relay_active_sessions'), 0, 'no active session left');

  const refusal = await refused(attachUrl(env.url, s.id), { secret: 'vr_sk_' + 'x'.repeat(40) });
  t.equal(refusal.status, 401);
  t.equal(series(await env.metrics.scrape(), 's2s_relay_attaches_total', { error_type: refusal.body.error.code }), 1, 'refusal by code');
});
