import { connect } from '@nats-io/transport-node';
import {
  headers as natsHeaders,
  nanos,
  NoRespondersError,
  TimeoutError,
  type MsgHdrs,
  type NatsConnection,
  type Subscription,
} from '@nats-io/nats-core';
import {
  jetstream,
  jetstreamManager,
  JetStreamApiError,
  RetentionPolicy,
  StorageType,
  type ConsumerConfig,
  type ConsumerInfo,
  type JetStreamClient,
  type JetStreamManager,
  type PubAck,
} from '@nats-io/jetstream';
import { SpanKind, SpanStatusCode, context, propagation, trace, type Context } from '@opentelemetry/api';
import { AckedPublisher } from './hot/acked-publish.js';
import { BusEnvelope, BusMessage, busSubjects, fastUsageCheckpoint, LEGACY_BUS_MESSAGES, type BusSubjects } from '@s2s/contract';

export type { NatsConnection, Subscription, MsgHdrs } from '@nats-io/nats-core';
export type {
  JetStreamClient,
  JetStreamManager,
  JsMsg,
  Consumer,
  ConsumerConfig,
  ConsumerInfo,
  ConsumerMessages,
} from '@nats-io/jetstream';
export { AckPolicy, DeliverPolicy, JetStreamApiError } from '@nats-io/jetstream';
export { nanos } from '@nats-io/nats-core';
/** A fresh, empty NATS header set (e.g. to copy a message's headers onto a dead-letter copy). */
export { headers as createHeaders } from '@nats-io/nats-core';

export interface Bus {
  nc: NatsConnection;
  js: JetStreamClient;
  jsm: JetStreamManager;
  subjects: BusSubjects;
  /**
   * Publishes to JetStream with a Msg-Id, so a retry inside the duplicate window is a no-op. Its trace headers:
   * `headers` when given (a caller that passes its context explicitly), else the active span's.
   */
  publish(subject: string, message: BusMessage, msgId: string, headers?: MsgHdrs): Promise<PubAck>;
  /**
   * The same for a payload already encoded, with the given headers (e.g. trace context made once) and no
   * per-request objects (AckedPublisher): for a process that publishes acknowledged messages on its hot path.
   */
  publishAcked(subject: string, payload: Uint8Array | string, msgId: string, headers?: MsgHdrs): Promise<PubAck>;
  close(): Promise<void>;
}

export interface BusOptions {
  /** One server, or a cluster's servers comma-separated. */
  url: string;
  prefix: string;
  name?: string;
  /** Keep trying to connect at start-up (a broker that is restarting). */
  waitOnFirstConnect?: boolean;
  /**
   * Skip the stack trace nats.js captures at every request (a JetStream publish is one) for the error it
   * would raise on a timeout: worth it for a process that publishes on its hot path.
   */
  noAsyncTraces?: boolean;
  /** How long start-up waits for JetStream to answer (a cluster electing its leaders); default 60 s. */
  startupTimeoutMs?: number;
  /** Replicas of the stream when this process creates it, or the least an existing one is raised to (default 1). */
  streamReplicas?: number;
}

const DUPLICATE_WINDOW_MS = 120_000;
const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** Connects and makes sure the stream exists (idempotent, safe from several processes at once). */
export async function connectBus(opts: BusOptions): Promise<Bus> {
  const nc = await connect({
    // A cluster's nodes, comma-separated (`nats://a:4222,nats://b:4222`): the client moves between them.
    servers: opts.url.split(',').map((u) => u.trim()),
    name: opts.name,
    maxReconnectAttempts: -1,
    reconnectTimeWait: 250,
    waitOnFirstConnect: opts.waitOnFirstConnect ?? false,
    noAsyncTraces: opts.noAsyncTraces ?? false,
  });
  const subjects = busSubjects(opts.prefix);
  // A cluster electing its JetStream leaders (a node restarting, all starting at once) answers late or 503:
  // a service starting meanwhile waits for it rather than exiting.
  const jsm = await untilJetStreamAnswers(async () => {
    const m = await jetstreamManager(nc);
    await ensureStream(m, subjects, { replicas: opts.streamReplicas ?? 1 });
    return m;
  }, opts.startupTimeoutMs ?? 60_000);
  const js = jetstream(nc);
  // Made on first use: most processes never publish this way.
  let acked: AckedPublisher | undefined;
  return {
    nc,
    js,
    jsm,
    subjects,
    publish: (subject, message, msgId, headers) =>
      js.publish(subject, encodeMessage(message), { msgID: msgId, headers: headers ?? traceHeaders() }),
    publishAcked: (subject, payload, msgId, headers) => (acked ??= new AckedPublisher(nc)).publish(subject, payload, msgId, headers),
    close: async () => {
      if (!nc.isClosed()) await nc.drain().catch(() => nc.close());
      acked?.close();
    },
  };
}

/**
 * Creates the stream with `replicas` (BUS_STREAM_REPLICAS), or brings an existing one to the gateway's
 * config (idempotent, safe from several processes at once). An existing stream keeps what an operator set
 * above `replicas`; one below is raised to it. Durable consumers created without `num_replicas` follow it.
 */
export async function ensureStream(jsm: JetStreamManager, subjects: BusSubjects, opts: { replicas?: number } = {}): Promise<void> {
  const wanted = opts.replicas ?? 1;
  const config = {
    name: subjects.stream,
    subjects: subjects.all,
    retention: RetentionPolicy.Limits,
    storage: StorageType.File,
    duplicate_window: nanos(DUPLICATE_WINDOW_MS),
    max_age: nanos(7 * 24 * 3600 * 1000),
  };
  try {
    const info = await jsm.streams.info(subjects.stream);
    const replicas = streamReplicas(info.config.num_replicas, wanted);
    // The update merges into the stream's own config: without num_replicas it keeps the current count.
    await jsm.streams.update(subjects.stream, replicas === info.config.num_replicas ? config : { ...config, num_replicas: replicas });
  } catch (err) {
    if (!isNotFound(err)) throw err;
    try {
      await jsm.streams.add({ ...config, num_replicas: wanted });
    } catch (addErr) {
      // Another process created it between our info and add.
      if (!(addErr instanceof JetStreamApiError) || addErr.code !== 10058) throw addErr;
    }
  }
}

/** The replicas an existing stream should have: what it has (an operator's choice), or more if configured. */
export function streamReplicas(current: number | undefined, wanted: number): number {
  return Math.max(current || 1, wanted);
}

async function untilJetStreamAnswers<T>(fn: () => Promise<T>, timeoutMs: number): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (let delay = 250; ; delay = Math.min(delay * 2, 2000)) {
    try {
      return await fn();
    } catch (err) {
      if (!isJetStreamUnavailable(err) || Date.now() + delay > deadline) throw err;
      await new Promise((resolve) => setTimeout(resolve, delay));
    }
  }
}

/** A request that timed out or found JetStream without a leader (10008: temporarily unavailable). */
function isJetStreamUnavailable(err: unknown): boolean {
  if (err instanceof JetStreamApiError) return err.code === 10008 || err.status === 503;
  return err instanceof TimeoutError || err instanceof NoRespondersError;
}

function isNotFound(err: unknown): boolean {
  return err instanceof JetStreamApiError && (err.code === 10059 || err.code === 10014 || err.status === 404);
}

export function encodeMessage(message: BusMessage): Uint8Array {
  return encoder.encode(JSON.stringify(message));
}

export type DecodeResult = { ok: true; message: BusMessage } | { ok: false; reason: 'malformed' | 'unknown_version'; detail: string };

/** Parses a bus payload; tells a malformed message from one of a type/version this build does not know. */
export function decodeMessage(data: Uint8Array): DecodeResult {
  let json: unknown;
  try {
    json = JSON.parse(decoder.decode(data));
  } catch {
    return { ok: false, reason: 'malformed', detail: 'not JSON' };
  }
  // Billing reads tens of thousands of checkpoints a second: those skip zod (same result, contract tests).
  const checkpoint = fastUsageCheckpoint(json);
  if (checkpoint) return { ok: true, message: checkpoint };
  // The whole parse first: it is the common case, and the envelope is only needed to explain a failure.
  const parsed = BusMessage.safeParse(json);
  if (parsed.success) return { ok: true, message: parsed.data };
  const envelope = BusEnvelope.safeParse(json);
  if (!envelope.success) return { ok: false, reason: 'malformed', detail: 'no type/version' };
  const { type, version } = envelope.data;
  // An older version still read during a rolling upgrade comes out as the current one.
  const legacy = LEGACY_BUS_MESSAGES.find((l) => l.type === type && l.version === version);
  if (legacy) {
    const old = legacy.schema.safeParse(json);
    return old.success
      ? { ok: true, message: old.data }
      : { ok: false, reason: 'malformed', detail: old.error.issues.map((i) => i.path.join('.')).join(',') };
  }
  const known = BusMessage.options.some((o) => o.shape.type.value === type && o.shape.version.value === version);
  return known
    ? { ok: false, reason: 'malformed', detail: parsed.error.issues.map((i) => i.path.join('.')).join(',') }
    : { ok: false, reason: 'unknown_version', detail: `${envelope.data.type}@${envelope.data.version}` };
}

/**
 * W3C trace context of the active span (or of `ctx`), as NATS headers. A publisher on a hot path makes
 * them once per trace and passes the same headers to every publish (nats.js encodes them per publish).
 */
export function traceHeaders(ctx: Context = context.active()): MsgHdrs {
  const h = natsHeaders();
  const carrier: Record<string, string> = {};
  propagation.inject(ctx, carrier);
  for (const [k, v] of Object.entries(carrier)) h.set(k, v);
  return h;
}

/** The trace context a message's headers carry (the root context when they carry none). */
export function messageContext(hdrs: MsgHdrs | undefined): Context {
  if (!hdrs) return context.active();
  const carrier: Record<string, string> = {};
  for (const key of hdrs.keys()) carrier[key.toLowerCase()] = hdrs.get(key);
  return propagation.extract(context.active(), carrier);
}

/** Runs `fn` inside the trace context carried by a message's headers. */
export function withMessageContext<T>(hdrs: MsgHdrs | undefined, fn: () => T): T {
  return context.with(messageContext(hdrs), fn);
}

const busTracer = () => trace.getTracer('s2s.bus');

/** The message kind of a subject, for span names (`s2s.usage.checkpoint.vs_1` → `usage.checkpoint`). */
function kindOf(subject: string): string {
  const parts = subject.split('.');
  return parts.length > 2 ? parts.slice(1, -1).join('.') : subject;
}

function consumerSpan(msg: { subject: string; headers?: MsgHdrs; info?: { stream: string } }, batch?: number) {
  return busTracer().startSpan(
    `process ${kindOf(msg.subject)}`,
    {
      kind: SpanKind.CONSUMER,
      attributes: {
        'messaging.system': 'nats',
        'messaging.operation.type': 'process',
        'messaging.destination.name': msg.subject,
        ...(batch !== undefined ? { 'messaging.batch.message_count': batch } : {}),
      },
    },
    messageContext(msg.headers),
  );
}

/**
 * Runs `fn` in a consumer span that is a child of the span that published `msg` (its trace headers), so
 * the work a message causes lands in the producer's trace.
 */
export async function inConsumerSpan<T>(msg: { subject: string; headers?: MsgHdrs }, fn: () => Promise<T>): Promise<T> {
  const span = consumerSpan(msg);
  try {
    return await context.with(trace.setSpan(messageContext(msg.headers), span), fn);
  } catch (err) {
    span.setStatus({ code: SpanStatusCode.ERROR });
    throw err;
  } finally {
    span.end();
  }
}

/**
 * For a batch handled at once: one consumer span per message, each in the trace its headers carry (so
 * every producer's trace shows its message consumed), and `fn` run in a batch span linked to them all.
 */
export async function inConsumerBatchSpans<T>(msgs: readonly { subject: string; headers?: MsgHdrs }[], fn: () => Promise<T>): Promise<T> {
  const first = msgs[0];
  if (!first) return fn();
  const spans = msgs.map((m) => consumerSpan(m, msgs.length));
  const batch = busTracer().startSpan(
    `process ${kindOf(first.subject)} batch`,
    {
      kind: SpanKind.CONSUMER,
      attributes: { 'messaging.system': 'nats', 'messaging.operation.type': 'process', 'messaging.batch.message_count': msgs.length },
      links: spans.filter((s) => s.isRecording()).map((s) => ({ context: s.spanContext() })),
    },
    context.active(),
  );
  try {
    return await context.with(trace.setSpan(context.active(), batch), fn);
  } catch (err) {
    for (const s of [batch, ...spans]) s.setStatus({ code: SpanStatusCode.ERROR });
    throw err;
  } finally {
    batch.end();
    for (const s of spans) s.end();
  }
}

/**
 * Core (non-JetStream) subscription to messages published on a subject; JetStream publishes reach core
 * subscribers too. Used for low-latency notifications that have a durable fallback elsewhere.
 */
export function subscribeMessages(
  nc: NatsConnection,
  subject: string,
  onMessage: (message: BusMessage, subject: string) => void,
): Subscription {
  return nc.subscribe(subject, {
    callback: (err, msg) => {
      if (err) return;
      const decoded = decodeMessage(msg.data);
      if (decoded.ok) onMessage(decoded.message, msg.subject);
    },
  });
}

/** True when the server accepts `filter_subjects` (several filters on one consumer): nats-server 2.10+. */
export function supportsMultipleFilters(nc: NatsConnection): boolean {
  const [major = 0, minor = 0] = (nc.info?.version ?? '0.0').split('.').map((n) => Number.parseInt(n, 10));
  return major > 2 || (major === 2 && minor >= 10);
}

/**
 * Creates a durable consumer, or brings an existing one to `config` (idempotent, safe from several
 * processes at once). Only the settings a server lets change are updated on an existing consumer.
 */
export async function ensureDurableConsumer(
  jsm: JetStreamManager,
  stream: string,
  config: Partial<ConsumerConfig> & { durable_name: string },
): Promise<ConsumerInfo> {
  const { durable_name: name, ack_policy: _a, deliver_policy: _d, ...updatable } = config;
  try {
    await jsm.consumers.info(stream, name);
  } catch (err) {
    if (!isNotFound(err)) throw err;
    try {
      return await jsm.consumers.add(stream, config);
    } catch (addErr) {
      // Another process created it between our info and add: fall through to the update.
      if (!(addErr instanceof JetStreamApiError) || addErr.code !== 10148) throw addErr;
    }
  }
  return jsm.consumers.update(stream, name, updatable);
}

export {
  createWorker,
  type Decoded,
  type Handlers,
  type Item,
  type KindHandler,
  type MessageSource,
  type Worker,
  type WorkerLog,
  type WorkerMsg,
  type WorkerOptions,
  type WorkerStats,
} from './worker.js';
export {
  ACK,
  isLastDelivery,
  isRetryableError,
  retryDelayMs,
  verdictFor,
  type Outcome,
  type RetryPolicy,
  type Verdict,
} from './verdict.js';
export { deadLetterTo, pullSource } from './jetstream-worker.js';
export { AckedPublisher } from './hot/acked-publish.js';
