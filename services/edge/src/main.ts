// Composition root of the edge: config → proxy → listen → close on SIGTERM.
import { once } from 'node:events';
import { createLogger } from '@s2s/telemetry';
import { loadConfig, tlsOf } from './config.js';
import { createEdge } from './edge.js';
import { parentChannel } from './handoff.js';

const config = loadConfig(process.env);
const logger = createLogger({ service: 'edge', level: config.LOG_LEVEL });
const tls = tlsOf(config);
const handoff = config.RELAY_HANDOFF === 'ipc' ? parentChannel() : undefined;
if (config.RELAY_HANDOFF === 'ipc' && !handoff) logger.warn('RELAY_HANDOFF=ipc but no IPC channel to a parent: proxying upgrades');
const edge = createEdge({ controlPlane: config.CONTROL_PLANE_URL, relays: config.RELAY_URLS, tls, handoff, logger });
edge.server.listen(config.HTTP_PORT, config.HOST);
await once(edge.server, 'listening');
logger.info(
  {
    host: config.HOST,
    port: config.HTTP_PORT,
    tls: tls !== undefined,
    relays: config.RELAY_URLS.length,
    handoff: handoff !== undefined && !tls,
  },
  'edge listening',
);

let stopping = false;
const stop = async (signal: string) => {
  if (stopping) return;
  stopping = true;
  logger.info({ signal }, 'edge stopping');
  setTimeout(() => process.exit(1), 5000).unref();
  await edge.close();
  process.exit(0);
};
process.once('SIGTERM', () => void stop('SIGTERM'));
process.once('SIGINT', () => void stop('SIGINT'));
