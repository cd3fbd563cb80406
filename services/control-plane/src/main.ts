// Composition root. Telemetry starts before express, pg and http are imported (hence the dynamic imports);
// run with `node --import @s2s/telemetry/register dist/main.js` (see packages/telemetry/src/register.ts).
import { startTelemetry } from '@s2s/telemetry';

// The server makes its own server spans and HTTP duration metric (server.ts, tracedRequests).
const telemetry = startTelemetry({ serviceName: 'control-plane', env: process.env, ownHttpServerSpans: true });
const { loadConfig } = await import('./config.js');
const { createLogger } = await import('@s2s/telemetry');
const { createDb } = await import('@s2s/db');
const { connectBus } = await import('@s2s/bus');
const { buildApp } = await import('./app.js');
const { createContext } = await import('./context.js');
const { seedCatalog } = await import('./domain/catalog.js');
const { serve } = await import('./server.js');

const config = loadConfig(process.env);
const logger = createLogger({ service: 'control-plane', level: config.LOG_LEVEL });
const db = createDb(config.DATABASE_URL, {
  max: config.DB_POOL_SIZE,
  preparedStatements: config.DATABASE_PREPARED_STATEMENTS,
  ...(config.DB_STATEMENT_TIMEOUT_MS > 0 ? { statementTimeoutMs: config.DB_STATEMENT_TIMEOUT_MS } : {}),
  onPoolError: (err) => logger.warn({ err }, 'idle database connection failed'),
});
const bus = await connectBus({
  url: config.NATS_URL,
  prefix: config.BUS_PREFIX,
  name: 'control-plane',
  waitOnFirstConnect: true,
  streamReplicas: config.BUS_STREAM_REPLICAS,
});
const deps = { config, db, bus, logger, metrics: telemetry.metrics };
if (config.SEED_CATALOG) {
  const { inserted } = await seedCatalog({ ctx: createContext(deps) });
  if (inserted.length > 0) logger.info({ models: inserted }, 'default catalog seeded');
}
if (config.adminTokenIsDevDefault) {
  // The public development default (decisions.md), never a configured token.
  logger.warn({ dev_admin_token: config.ADMIN_TOKEN }, 'operator API uses the development admin token (ADMIN_TOKEN unset)');
}
await serve({ app: buildApp(deps), config, logger, onClosed: [() => bus.close(), () => db.close(), () => telemetry.shutdown()] });
