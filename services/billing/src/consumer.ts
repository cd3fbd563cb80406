import {
  ACK,
  AckPolicy,
  DeliverPolicy,
  createWorker,
  deadLetterTo,
  decodeMessage,
  ensureDurableConsumer,
  inConsumerBatchSpans,
  inConsumerSpan,
  messageContext,
  nanos,
  pullSource,
  supportsMultipleFilters,
  type Bus,
  type Decoded,
  type Item,
  type WorkerMsg,
  type WorkerStats,
} from '@s2s/bus';
import type { SessionEndRequested, UsageCheckpoint } from '@s2s/contract';
import { isStoreUnavailableError, type DbHandle } from '@s2s/db';
import { disabledMetrics, spansRecorded, type Context, type Logger, type Metrics } from '@s2s/telemetry';
import { watchBus, watchStore, type Availability } from './availability.js';
import type { BillingConfig } from './config.js';
import { newCounters, type BillingContext, type BillingCounters, type BillingFaults } from './handlers/context.js';
import { foldCheckpointBatch } from './handlers/fold-checkpoints.js';
import { settleEndRequest } from './handlers/settle-end-request.js';
import { BillingTelemetry } from './telemetry.js';

export const DURABLE_NAME = 'billing';

export interface BillingDeps {
  db: DbHandle;
  bus: Bus;
  config: BillingConfig;
  logger: Logger;
  now?: () => Date;
  /** Crash points of the fault tests; production passes none. */
  faults?: BillingFaults;
  /** Outage clocks; by default the store is probed every STORE_PROBE_MS and the bus connection followed. */
  store?: Availability;
  busLink?: Availability;
  /** The process's metrics (startTelemetry().metrics); none recorded when absent. */
  metrics?: Metrics;
}

/** Counters of one consumer process: the worker's and the handlers'. */
export type BillingStats = WorkerStats & BillingCounters;

export interface BillingConsumer {
  start(): Promise<void>;
  /** Stops pulling, finishes the batch in hand, hands back what is buffered, and returns. */
  stop(): Promise<void>;
  /** A snapshot of the counters. */
  readonly stats: BillingStats;
}

type Work = { kind: 'checkpoint'; checkpoint: UsageCheckpoint } | { kind: 'end'; end: SessionEndRequested };

/** The durable `billing` consumer (created or updated idempotently): explicit acks, bounded deliveries. */
export async function ensureBillingConsumer(bus: Bus, config: BillingConfig): Promise<void> {
  const s = bus.subjects;
  // nats-server 2.9 has no multi-filter consumers: it then gets the whole stream and acks what is not billing's.
  const filter = supportsMultipleFilters(bus.nc) ? { filter_subjects: [s.usageCheckpointAll, s.endRequestedAll] } : {};
  await ensureDurableConsumer(bus.jsm, s.stream, {
    durable_name: DURABLE_NAME,
    ack_policy: AckPolicy.Explicit,
    deliver_policy: DeliverPolicy.All,
    ack_wait: nanos(config.ACK_WAIT_MS),
    max_deliver: config.MAX_DELIVER,
    // The batch being folded and the next one filling: what this process may hold in memory at once.
    max_ack_pending: Math.max(1000, config.BATCH_SIZE * 2),
    ...filter,
  });
}

/** Billing's codec at the edge: bus payloads into work, or an answer that needs no database. */
export function billingDecoder(bus: Bus, counters: BillingCounters, log: Logger) {
  const s = bus.subjects;
  const checkpointPrefix = s.usageCheckpoint('');
  const endPrefix = s.endRequested('');
  return (msg: WorkerMsg): Decoded<Work> => {
    const isCheckpoint = msg.subject.startsWith(checkpointPrefix);
    const isEnd = msg.subject.startsWith(endPrefix);
    if (!isCheckpoint && !isEnd) return { ok: false, answer: 'ack' };
    const decoded = decodeMessage(msg.data);
    if (!decoded.ok) {
      if (decoded.reason === 'malformed') return { ok: false, answer: 'dead_letter', reason: `malformed: ${decoded.detail}` };
      counters.unknownVersion++;
      log.warn({ subject: msg.subject, stream_seq: msg.seq, message: decoded.detail }, 'bus message of an unknown version acknowledged');
      return { ok: false, answer: 'ack' };
    }
    const m = decoded.message;
    const subjectSession = msg.subject.slice((isCheckpoint ? checkpointPrefix : endPrefix).length);
    if (isCheckpoint && m.type === 'usage.checkpoint' && m.session_id === subjectSession)
      return { ok: true, value: { kind: 'checkpoint', checkpoint: m } };
    if (isEnd && m.type === 'session.end_requested' && m.session_id === subjectSession) return { ok: true, value: { kind: 'end', end: m } };
    return { ok: false, answer: 'dead_letter', reason: 'malformed: message does not match its subject' };
  };
}

/** The billing consumer: the generic JetStream worker with billing's decoder and its two handlers. */
export function createBillingConsumer(deps: BillingDeps): BillingConsumer {
  const { db, bus, config, logger } = deps;
  const counters = newCounters();
  const store = deps.store ?? watchStore(db, config.STORE_PROBE_MS);
  const busLink = deps.busLink ?? watchBus(bus.nc);
  const telemetry = new BillingTelemetry((deps.metrics ?? disabledMetrics()).meter, {
    deadLettered: () => worker.stats.deadLettered,
    pending: async () => {
      const info = await bus.jsm.consumers.info(bus.subjects.stream, DURABLE_NAME);
      return info.num_pending + info.num_ack_pending;
    },
  });
  const ctx: BillingContext = {
    telemetry,
    db,
    bus,
    log: logger,
    now: deps.now ?? (() => new Date()),
    counters,
    endWait: {
      graceMs: config.END_GRACE_MS,
      liveMaxWaitMs: config.END_LIVE_RELAY_MAX_WAIT_MS,
      leaseTtlMs: config.RELAY_LEASE_TTL_MS,
      maxDeliver: config.MAX_DELIVER,
      retryBaseMs: config.NAK_BASE_MS,
      retryMaxMs: config.NAK_MAX_MS,
    },
    store,
    busLink,
    ...(deps.faults ? { faults: deps.faults } : {}),
  };
  const worker = createWorker<Work>({
    source: pullSource(bus, { durable: DURABLE_NAME, batchSize: config.BATCH_SIZE, ackWaitMs: config.ACK_WAIT_MS }),
    decode: billingDecoder(bus, counters, logger),
    handlers: {
      checkpoint: {
        batch: async (items) => {
          const fold = async () => {
            const input = { checkpoints: items.map((i) => i.value.checkpoint), traceOf: sessionTraces(items) };
            await foldCheckpointBatch({ ctx, input });
            return items.map(() => ACK);
          };
          // A span per checkpoint costs more than its fold when no span can be recorded (no exporter).
          return spansRecorded()
            ? inConsumerBatchSpans(
                items.map((i) => i.msg),
                fold,
              )
            : fold();
        },
      },
      end: {
        each: (item) =>
          settleEndRequest({
            ctx,
            input: {
              end: item.value.end,
              deliveryCount: item.msg.info.deliveryCount,
              announcedAt: new Date(Math.floor(item.msg.info.timestampNanos / 1e6)),
            },
          }),
        concurrency: config.SETTLE_CONCURRENCY,
      },
    },
    deadLetter: deadLetterTo(bus, bus.subjects.deadLetter, 'Billing'),
    batchSize: config.BATCH_SIZE,
    // A batch gathers FOLD_WINDOW_MS of checkpoints (one row write per attachment carries all of them), but
    // what settlement waits for, an end request or a final checkpoint, starts its batch at once.
    lingerMs: foldWindowMs(config),
    urgent: (w) => w.kind === 'end' || w.checkpoint.final,
    ackWaitMs: config.ACK_WAIT_MS,
    maxDeliver: config.MAX_DELIVER,
    nakBaseMs: config.NAK_BASE_MS,
    nakMaxMs: config.NAK_MAX_MS,
    isOutage: isStoreUnavailableError,
    inMessageContext: (msg, fn) => inConsumerSpan(msg, fn),
    log: logger,
  });
  return {
    get stats() {
      return { ...worker.stats, ...counters };
    },
    async start() {
      await ensureBillingConsumer(bus, config);
      await worker.start();
    },
    async stop() {
      await worker.stop();
      store.stop();
      busLink.stop();
    },
  };
}

/** The fold window in use: FOLD_WINDOW_MS, within a quarter of the ack wait (messages wait it out unacknowledged). */
export function foldWindowMs(config: Pick<BillingConfig, 'FOLD_WINDOW_MS' | 'ACK_WAIT_MS'>): number {
  return Math.min(config.FOLD_WINDOW_MS, Math.floor(config.ACK_WAIT_MS / 4));
}

/** Each session's trace as its newest checkpoint in the batch carries it (the relay's attachment span). */
function sessionTraces(items: Item<{ kind: 'checkpoint'; checkpoint: UsageCheckpoint }>[]): (sessionId: string) => Context | undefined {
  // Built on the first call: most batches settle nothing.
  let bySession: Map<string, WorkerMsg> | undefined;
  return (sessionId) => {
    if (!bySession) {
      bySession = new Map();
      for (const i of items) bySession.set(i.value.checkpoint.session_id, i.msg);
    }
    const msg = bySession.get(sessionId);
    return msg ? messageContext(msg.headers) : undefined;
  };
}
