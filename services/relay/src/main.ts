import { startTelemetry, createLogger } from '@s2s/telemetry';
import { connectBus } from '@s2s/bus';
import { createDb } from '@s2s/db';
import { serveHandoffs } from '@s2s/handoff';
import { WebRtcEndpoint } from '@s2s/webrtc';
import { buildRelay } from './server/app.js';
import { loadConfig, webrtcOf } from './config.js';
import { createProviderOpener } from './upstream/provider-opener.js';

// No HTTP instrumentation (the relay makes its upgrade spans itself); pg's only when spans are recorded: its
// connect wraps enter AsyncLocalStorage, which on Node 20 turns async hooks on for the whole process.
const telemetry = startTelemetry({ serviceName: 'relay', ownHttpServerSpans: true });
const config = loadConfig(process.env);
const logger = createLogger({ service: 'relay', level: config.LOG_LEVEL });
const db = createDb(config.DATABASE_URL, {
  max: config.DB_POOL_SIZE,
  preparedStatements: config.DATABASE_PREPARED_STATEMENTS,
  onPoolError: (err) => logger.warn({ err }, 'idle database connection lost'),
});
// Every checkpoint is a JetStream request: no per-request stack capture (see BusOptions.noAsyncTraces).
const bus = await connectBus({
  url: config.NATS_URL,
  prefix: config.BUS_PREFIX,
  name: `relay ${config.RELAY_ID}`,
  waitOnFirstConnect: true,
  noAsyncTraces: true,
  streamReplicas: config.BUS_STREAM_REPLICAS,
});
const webrtc = await WebRtcEndpoint.start({ ...webrtcOf(config), maxMessageBytes: config.REALTIME_MAX_EVENT_BYTES });
const app = buildRelay({ config, db, bus, logger, metrics: telemetry.metrics, providers: createProviderOpener(config, logger), webrtc });
await new Promise<void>((resolve) => app.server.listen(config.RELAY_PORT, config.HOST, resolve));
// npm start: the edge hands /v1/realtime connections over on the IPC channel (@s2s/handoff).
const handoffs = serveHandoffs((socket, request) => app.adopt(socket, request));
const address = app.server.address();
logger.info(
  {
    relay_id: config.RELAY_ID,
    port: typeof address === 'object' && address ? address.port : config.RELAY_PORT,
    handoffs,
    webrtc_udp_port: webrtc.port,
    webrtc_addresses: webrtc.announcedAddresses,
  },
  'relay listening',
);

let draining = false;
async function drain(signal: string): Promise<void> {
  if (draining) return;
  draining = true;
  logger.info({ signal, attachments: app.relay.size }, 'relay draining');
  // Sockets are bounded by the deadline; unpublished final checkpoints are not: the process stays (its lease
  // renewed, billing waiting) until the bus takes them. Only a SIGKILL ends it sooner, and the lease then expires.
  const deadline = setInterval(() => {
    if (app.relay.pendingFinals > 0) return logger.error({ pending: app.relay.pendingFinals }, 'drain waits for final checkpoints');
    logger.error('drain timed out');
    process.exit(1);
  }, config.DRAIN_TIMEOUT_MS);
  deadline.unref();
  await app.close();
  await webrtc.close();
  await bus.close();
  await db.close();
  await telemetry.shutdown();
  logger.info('relay stopped');
  process.exit(0);
}
process.once('SIGTERM', () => void drain('SIGTERM'));
process.once('SIGINT', () => void drain('SIGINT'));
