// Composition root. Telemetry starts before express, pg and http are imported (hence the dynamic imports);
// run with `node --import @s2s/telemetry/register dist/main.js` (see packages/telemetry/src/register.ts).
import { startTelemetry } from '@s2s/telemetry';

const telemetry = startTelemetry({ serviceName: 'control-plane', env: process.env });
const { loadConfig } = await import('./config.js');
const { createLogger } = await import('@s2s/telemetry');
const { createDb } = await import('@s2s/db');
const { connectBus } = await import('@s2s/bus');
const { buildApp } = await import('./app.js');
const { createContext } = await import('./context.js');
const { seedCatalog } = await import('./domain/catalog.js');
const { serve } = await import('./server.js');

const config = loadConfig(process.env);
const logger = createLogger({ service: 'control-plane', level: config.logLevel });
const db = createDb(config.databaseUrl, {
  max: config.dbPoolSize,
  ...(config.dbStatementTimeoutMs > 0 ? { statementTimeoutMs: config.dbStatementTimeoutMs } : {}),
  onPoolError: (err) => logger.warn({ err }, 'idle database connection failed'),
});
const bus = await connectBus({ url: config.natsUrl, prefix: config.busPrefix, name: 'control-plane', waitOnFirstConnect: true });
const deps = { config, db, bus, logger };
if (config.seedCatalog) {
  const { inserted } = await seedCatalog({ ctx: createContext(deps) });
  if (inserted.length > 0) logger.info({ models: inserted }, 'default catalog seeded');
}
if (config.adminTokenIsDevDefault) {
  // The public development default (decisions.md), never a configured token.
  logger.warn({ dev_admin_token: config.adminToken }, 'operator API uses the development admin token (ADMIN_TOKEN unset)');
}
await serve({ app: buildApp(deps), config, logger, onClosed: [() => bus.close(), () => db.close(), () => telemetry.shutdown()] });
