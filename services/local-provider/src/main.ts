import { startLocalProvider } from '@s2s/local-provider';
import { createLogger, startTelemetry } from '@s2s/telemetry';
import { loadConfig } from './config.js';

// Spans of its upstream sessions (children of the relay's connect spans) when OTEL_* configures an export.
const telemetry = startTelemetry({ serviceName: 'local-provider', instrumentations: [] });
const config = loadConfig(process.env);
const logger = createLogger({ service: 'local-provider', level: config.logLevel });

const provider = await startLocalProvider({ ...config.provider, logger, metrics: telemetry.metrics.handler });

let stopping = false;
async function shutdown(signal: string): Promise<void> {
  if (stopping) return;
  stopping = true;
  logger.info({ signal }, 'local provider stopping');
  // Bounded: a stuck close must not keep the process past the supervisor's patience.
  setTimeout(() => process.exit(1), 5000).unref();
  await provider.close();
  await telemetry.shutdown();
  logger.info('local provider stopped');
  process.exit(0);
}
process.on('SIGTERM', () => void shutdown('SIGTERM'));
process.on('SIGINT', () => void shutdown('SIGINT'));
