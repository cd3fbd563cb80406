import { startTelemetry } from '@s2s/telemetry';
import { loadConfig } from './config.js';
import { startBilling } from './service.js';

const telemetry = startTelemetry({ serviceName: 'billing', instrumentations: ['pg'] });
const billing = await startBilling(loadConfig(process.env), { metrics: telemetry.metrics });

let draining = false;
async function drain(): Promise<void> {
  if (draining) return;
  draining = true;
  await billing.drain();
  await telemetry.shutdown();
  process.exit(0);
}
process.once('SIGTERM', () => void drain());
process.once('SIGINT', () => void drain());
