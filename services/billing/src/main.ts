import { startTelemetry, createLogger } from '@s2s/telemetry';
import { connectBus } from '@s2s/bus';
import { createDb } from '@s2s/db';
import { loadConfig } from './config.js';
import { createBillingConsumer } from './consumer.js';
import { startHealthServer } from './health.js';
import { createSweeper } from './sweeper.js';

const telemetry = startTelemetry({ serviceName: 'billing', instrumentations: ['pg'] });
const config = loadConfig(process.env);
const logger = createLogger({ service: 'billing', level: config.LOG_LEVEL });
const db = createDb(config.DATABASE_URL, {
  max: config.DB_POOL_SIZE,
  onPoolError: (err) => logger.warn({ err }, 'idle database connection lost'),
});
const bus = await connectBus({ url: config.NATS_URL, prefix: config.BUS_PREFIX, name: 'billing', waitOnFirstConnect: true });
const consumer = createBillingConsumer({ db, bus, config, logger });
const sweeper = createSweeper({ db, bus, config, logger });
await consumer.start();
sweeper.start();
let draining = false;
const health =
  config.HEALTH_PORT === undefined
    ? undefined
    : await startHealthServer(config.HEALTH_PORT, config.HOST, {
        draining: () => draining,
        ready: async () => {
          if (bus.nc.isClosed()) throw new Error('bus closed');
          await db.pool.query('SELECT 1');
        },
      });
const healthAddress = health?.address();
const healthPort = healthAddress && typeof healthAddress === 'object' ? healthAddress.port : undefined;
logger.info({ prefix: config.BUS_PREFIX, pid: process.pid, healthPort }, 'billing consumer started');

async function drain(signal: string): Promise<void> {
  if (draining) return;
  draining = true;
  logger.info({ signal, stats: consumer.stats }, 'billing draining');
  health?.close();
  await sweeper.stop();
  await consumer.stop();
  await bus.close();
  await db.close();
  await telemetry.shutdown();
  process.exit(0);
}
process.once('SIGTERM', () => void drain('SIGTERM'));
process.once('SIGINT', () => void drain('SIGINT'));
