import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { Express } from 'express';
import { answerParserRefusals, SERVER_KEEP_ALIVE_MS } from '@s2s/http-errors';
import { tracedRequests, type Logger } from '@s2s/telemetry';
import type { Config } from './config.js';

/**
 * The control plane's HTTP server: express for requests, each in its server span with its duration metric
 * (`tracedRequests`: telemetry starts with `ownHttpServerSpans`), ErrorResponses for what the parser refuses.
 */
export function createHttpServer(app: Express, logger: Logger): Server {
  const server = createServer(tracedRequests(app));
  answerParserRefusals(server, logger);
  // The edge keeps idle connections for less time (PROXY_IDLE_MS), so it never reuses one this server is closing.
  server.keepAliveTimeout = SERVER_KEEP_ALIVE_MS;
  return server;
}

export interface ServeOptions {
  app: Express;
  config: Pick<Config, 'HOST' | 'HTTP_PORT' | 'SHUTDOWN_GRACE_MS'>;
  logger: Logger;
  /** Closed in order once the server has drained (bus, database, telemetry). */
  onClosed: (() => Promise<unknown>)[];
}

/**
 * Listens, logs where, and on SIGTERM/SIGINT drains: stop accepting, let in-flight requests finish
 * (closing their sockets after SHUTDOWN_GRACE_MS), close the dependencies, exit 0.
 */
export async function serve(opts: ServeOptions): Promise<Server> {
  const { app, config, logger } = opts;
  const server = createHttpServer(app, logger).listen(config.HTTP_PORT, config.HOST);
  await once(server, 'listening');
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : config.HTTP_PORT;
  logger.info({ host: config.HOST, port, url: `http://${config.HOST}:${port}` }, 'control plane listening');

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'shutting down');
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    server.closeIdleConnections();
    const grace = setTimeout(() => server.closeAllConnections(), config.SHUTDOWN_GRACE_MS);
    await closed;
    clearTimeout(grace);
    for (const close of opts.onClosed) {
      await close().catch((err: unknown) => logger.error({ err }, 'error while closing a dependency'));
    }
    logger.info('shut down');
    process.exit(0);
  };
  process.once('SIGTERM', () => void stop('SIGTERM'));
  process.once('SIGINT', () => void stop('SIGINT'));
  return server;
}
