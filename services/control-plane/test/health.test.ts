import t from 'tap';
import { api, startControlPlane } from './helpers.js';

t.test('/healthz and /readyz', async (t) => {
  const h = await startControlPlane(t);
  const health = await api(h, 'GET', '/healthz');
  t.same([health.status, health.body], [200, { status: 'ok' }]);
  const ready = await api(h, 'GET', '/readyz');
  t.same([ready.status, ready.body], [200, { status: 'ok' }]);
  t.match(ready.headers.get('x-request-id'), /^req_/);

  await h.bus.close();
  const busDown = await api(h, 'GET', '/readyz');
  t.same([busDown.status, busDown.body.error.code, busDown.body.error.type], [503, 'service_unavailable', 'service_unavailable_error']);
  t.equal((await api(h, 'GET', '/healthz')).status, 200);
});
