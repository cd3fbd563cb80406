import { createServer } from 'node:net';

/**
 * A loopback port nothing listens on: one the kernel just handed out and was closed again. A fixed
 * "unreachable" port may be in use on a shared machine (another engineer's range).
 */
export async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve, reject) => server.once('error', reject).listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}
