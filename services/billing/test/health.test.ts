import t from 'tap';
import type { AddressInfo } from 'node:net';
import { startHealthServer } from '../src/health.js';

t.test('healthz answers while up; readyz follows the dependencies and draining', async (t) => {
  let draining = false;
  let dependenciesUp = true;
  const server = await startHealthServer(0, '127.0.0.1', {
    draining: () => draining,
    ready: async () => {
      if (!dependenciesUp) throw new Error('db down');
    },
  });
  t.teardown(() => server.close());
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const status = async (path: string) => (await fetch(base + path)).status;

  t.equal(await status('/healthz'), 200);
  t.equal(await status('/readyz'), 200);
  dependenciesUp = false;
  t.equal(await status('/readyz'), 503, 'a dependency that does not answer makes it unready');
  t.equal(await status('/healthz'), 200, 'but the process is still alive');
  dependenciesUp = true;
  draining = true;
  t.equal(await status('/readyz'), 503, 'draining takes it out of rotation');
  t.equal(await status('/nope'), 404);
});
