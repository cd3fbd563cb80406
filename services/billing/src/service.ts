import { connectBus } from '@s2s/bus';
import { createDb } from '@s2s/db';
import { createLogger, type Metrics } from '@s2s/telemetry';
import type { BillingConfig } from './config.js';
import { watchStore } from './availability.js';
import { createBillingConsumer, type BillingStats } from './consumer.js';
import type { BillingFaults } from './handlers/context.js';
import { startHealthServer } from './health.js';
import { createSweeper } from './sweeper.js';

export interface RunningBilling {
  stats(): BillingStats;
  /** Stops the sweeper and the consumer (the batch in hand finishes), then closes every connection. */
  drain(): Promise<void>;
}

/** Builds and starts one billing process: database, bus, consumer, sweeper and the health server. */
export async function startBilling(
  config: BillingConfig,
  extras: { faults?: BillingFaults; metrics?: Metrics } = {},
): Promise<RunningBilling> {
  const logger = createLogger({ service: 'billing', level: config.LOG_LEVEL });
  const db = createDb(config.DATABASE_URL, {
    max: config.DB_POOL_SIZE,
    preparedStatements: config.DATABASE_PREPARED_STATEMENTS,
    onPoolError: (err) => logger.warn({ err }, 'idle database connection lost'),
  });
  const bus = await connectBus({
    url: config.NATS_URL,
    prefix: config.BUS_PREFIX,
    name: 'billing',
    waitOnFirstConnect: true,
    streamReplicas: config.BUS_STREAM_REPLICAS,
  });
  // One store outage clock for the lease rule, wherever billing applies it (settling ends, ending lost calls).
  const store = watchStore(db, config.STORE_PROBE_MS);
  const consumer = createBillingConsumer({ db, bus, config, logger, store, ...extras });
  const sweeper = createSweeper({ db, bus, config, logger, store });
  await consumer.start();
  sweeper.start();
  let draining = false;
  const health =
    config.HEALTH_PORT === undefined
      ? undefined
      : await startHealthServer(config.HEALTH_PORT, config.HOST, {
          draining: () => draining,
          ...(extras.metrics ? { metrics: extras.metrics.handler } : {}),
          ready: async () => {
            if (bus.nc.isClosed()) throw new Error('bus closed');
            await db.pool.query('SELECT 1');
          },
        });
  const healthAddress = health?.address();
  const healthPort = healthAddress && typeof healthAddress === 'object' ? healthAddress.port : undefined;
  logger.info({ prefix: config.BUS_PREFIX, pid: process.pid, healthPort }, 'billing consumer started');
  return {
    stats: () => consumer.stats,
    async drain() {
      if (draining) return;
      draining = true;
      logger.info({ stats: consumer.stats }, 'billing draining');
      health?.close();
      await sweeper.stop();
      await consumer.stop();
      await bus.close();
      await db.close();
    },
  };
}
