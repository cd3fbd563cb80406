import { startTelemetry, createLogger } from '@s2s/telemetry';
import { connectBus } from '@s2s/bus';
import { createDb } from '@s2s/db';
import { loadConfig } from './config.js';
import { createBillingConsumer } from './consumer.js';
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
logger.info({ prefix: config.BUS_PREFIX, pid: process.pid }, 'billing consumer started');

let draining = false;
async function drain(signal: string): Promise<void> {
  if (draining) return;
  draining = true;
  logger.info({ signal, stats: consumer.stats }, 'billing draining');
  await sweeper.stop();
  await consumer.stop();
  await bus.close();
  await db.close();
  await telemetry.shutdown();
  process.exit(0);
}
process.once('SIGTERM', () => void drain('SIGTERM'));
process.once('SIGINT', () => void drain('SIGINT'));
