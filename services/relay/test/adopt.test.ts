// A connection accepted elsewhere and handed over (the npm-start edge, @s2s/handoff): RelayApp.adopt serves it
// as if the relay had accepted it (every check reads the client's own request), and resolves once the request
// has been answered, which is when the edge lets go of its copy.
import { once } from 'node:events';
import net, { type AddressInfo } from 'node:net';
import t from 'tap';
import type { RelayApp } from '../src/server/app.js';
import { attach, attachUrl, createKey, createModel, newSession, refused, setupRelay, type Teardown } from './helpers.js';

const MODEL = 'local/echo';

/** A stand-in edge: accepts each connection, reads its request head, then hands the socket to `app.adopt`. */
async function adoptingEdge(t: Teardown, app: RelayApp): Promise<{ url: string; answered: Promise<void>[] }> {
  const answered: Promise<void>[] = [];
  const server = net.createServer((socket) => {
    let head = Buffer.alloc(0);
    const onData = (chunk: Buffer) => {
      head = Buffer.concat([head, chunk]);
      if (!head.includes('\r\n\r\n')) return;
      socket.off('data', onData);
      socket.pause();
      answered.push(app.adopt(socket, head));
    };
    socket.on('data', onData);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  t.teardown(() => server.close());
  return { url: `ws://127.0.0.1:${(server.address() as AddressInfo).port}/v1/realtime`, answered };
}

t.test('adopt: a handed-over connection attaches; another Origin is refused 403; a draining relay answers 503', async (t) => {
  const env = await setupRelay(t, { REALTIME_ALLOWED_ORIGINS: 'https://app.example.com' });
  await createModel(env.db, { id: MODEL, providerModel: 'echo-stream' });
  const key = await createKey(env.db, 10_000);
  const session = await newSession(env.db, key, MODEL);
  const edge = await adoptingEdge(t, env.app);

  const { client, created } = await attach(attachUrl(edge.url, session.id), key.secret);
  t.match(created, { type: 'session.created', session: { id: session.id } }, 'attached through the handed-over connection');
  await t.resolves(edge.answered[0]!, 'adopt resolves once the 101 is written');
  client.close();

  const origin = await refused(attachUrl(edge.url, session.id), { secret: key.secret, headers: { Origin: 'https://evil.example.net' } });
  t.match(origin, { status: 403, body: { error: { code: 'origin_not_allowed' } } }, "the relay reads the client's Origin");
  await t.resolves(edge.answered[1]!, 'and once the refusal is written');

  await env.app.close();
  const draining = await refused(attachUrl(edge.url, session.id), { secret: key.secret });
  t.match(draining, { status: 503, body: { error: { code: 'service_unavailable' } } }, 'a draining relay refuses what it is handed');
  await t.resolves(edge.answered[2]!);
  t.equal(edge.answered.length, 3, 'every connection was handed over');
});
