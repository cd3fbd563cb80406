import { sleep as coreSleep } from '@s2s/core';
import type { MsgHdrs } from '@nats-io/nats-core';
import { ACK, retryDelayMs, verdictFor, type Outcome, type RetryPolicy } from './verdict.js';

/** The part of a JetStream message a worker uses (a `JsMsg` is one; tests pass fakes). */
export interface WorkerMsg {
  readonly subject: string;
  readonly data: Uint8Array;
  readonly headers?: MsgHdrs;
  readonly seq: number;
  readonly info: { readonly deliveryCount: number; readonly timestampNanos: number; readonly stream: string };
  ack(): void;
  nak(millis?: number): void;
  term(): void;
  working(): void;
}

/** Where messages come from: a JetStream pull consumer in production (`pullSource`), a fake in tests. */
export interface MessageSource {
  start(onMessage: (msg: WorkerMsg) => void): Promise<void>;
  /** Stops delivering; messages already handed over stay with the worker. */
  stop(): Promise<void>;
}

/** A decoded message of kind `K`, as a handler receives it. */
export interface Item<V> {
  msg: WorkerMsg;
  value: V;
}

/** What decoding a message gives: work for a handler, or an answer that needs no handler. */
export type Decoded<V> = { ok: true; value: V } | { ok: false; answer: 'ack' } | { ok: false; answer: 'dead_letter'; reason: string };

/**
 * How one kind of message is handled. `batch`: the whole batch's items at once (one outcome each); if it
 * throws, the worker runs it again one item at a time so one poison message holds up no other. `each`:
 * one item per call, `concurrency` at once, inside the trace context of its message headers.
 */
export type KindHandler<V> =
  { batch: (items: Item<V>[]) => Promise<Outcome[]> } | { each: (item: Item<V>) => Promise<Outcome>; concurrency: number };

export type Handlers<V extends { kind: string }> = { [K in V['kind']]: KindHandler<Extract<V, { kind: K }>> };

export interface WorkerLog {
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

export interface WorkerOptions<V extends { kind: string }> extends RetryPolicy {
  source: MessageSource;
  /** Runs as each message arrives, so that it overlaps the batch in hand waiting on its store. */
  decode(msg: WorkerMsg): Decoded<V>;
  handlers: Handlers<V>;
  /** Copies a message to the dead-letter subject; throws if the copy failed (the message is then retried). */
  deadLetter(msg: WorkerMsg, reason: string): Promise<void>;
  /** Messages handled per batch (at most; a batch is whatever has arrived, up to this). */
  batchSize: number;
  /**
   * How long a batch waits for more messages, counted from the arrival of its oldest (default 0: none). A
   * batch starts as soon as it is full, an `urgent` message is in the buffer, the batch before it was full
   * (a backlog being caught up), or the worker stops.
   */
  lingerMs?: number;
  /** A decoded message that must not wait out `lingerMs` (e.g. one another process waits for). */
  urgent?(value: V): boolean;
  /** The consumer's ack wait: an outage hold marks messages in progress well within it. */
  ackWaitMs: number;
  /** The store (or another dependency) is down: hold the messages in hand and try again, nothing is retried. */
  isOutage(err: unknown): boolean;
  /** Whether a failure may go away on a retry (else: dead-lettered at once). Default: `isRetryableError`. */
  isRetryable?(err: unknown): boolean;
  /** Runs a handler call of one message in its context (e.g. its trace headers). */
  inMessageContext?<T>(msg: WorkerMsg, fn: () => Promise<T>): Promise<T>;
  log: WorkerLog;
  /** Injected for tests. */
  sleep?(ms: number): Promise<void>;
}

/** Counters of one worker; read by tests, the benchmark and the drain log. */
export interface WorkerStats {
  received: number;
  batches: number;
  deadLettered: number;
  retried: number;
  waited: number;
  /** Handler calls that met an outage and were held (each retry counts). */
  held: number;
}

export interface Worker {
  start(): Promise<void>;
  /** Stops taking messages, finishes the batch in hand, hands back what is buffered, and returns. */
  stop(): Promise<void>;
  readonly stats: WorkerStats;
}

type Undecoded = Exclude<Decoded<never>, { ok: true }> | { ok: false; answer: 'thrown'; err: unknown };

/**
 * A message as it arrived, decoded on arrival (while the previous batch waits on its store). Decoded, it is
 * its handler's item as it stands: a batch of tens of thousands waits in memory, and every object kept per
 * message until then is copied by the young-generation collector (about a fifth of billing's CPU).
 */
interface Arrived<V> {
  msg: WorkerMsg;
  value: V | undefined;
  /** Why there is no value: answered without a handler. */
  undecoded: Undecoded | undefined;
}

/** Thrown out of an outage hold when the worker is stopping: what is unanswered goes back to the server. */
class Stopping extends Error {}

const OUTAGE_FIRST_WAIT_MS = 100;
const ACK_SLICE = 2000;
const OUTAGE_MAX_WAIT_MS = 2000;

/**
 * A JetStream worker: pulls messages, decodes them, runs each kind's handler on its part of the batch,
 * and maps outcomes to acks, delayed naks and dead letters (`verdictFor`). While a dependency is down
 * (`isOutage`) it holds the messages in hand, marked in progress, so an outage burns no deliveries.
 */
export function createWorker<V extends { kind: string }>(opts: WorkerOptions<V>): Worker {
  const stats: WorkerStats = { received: 0, batches: 0, deadLettered: 0, retried: 0, waited: 0, held: 0 };
  const sleep = opts.sleep ?? ((ms: number) => coreSleep(ms).then(() => undefined));
  const inContext = opts.inMessageContext ?? (<T>(_msg: WorkerMsg, fn: () => Promise<T>) => fn());
  const buffer: Arrived<V>[] = [];
  let wake: (() => void) | undefined;
  // Lingering (opts.lingerMs): when the buffer's oldest message arrived, whether an urgent one is in it, and
  // how to end the wait early. Only an arrival that ends the wait wakes the loop (not one per message).
  const lingerMs = opts.lingerMs ?? 0;
  // Only a worker that lingers asks: without a window nothing waits, and every arrival would pay the call.
  const urgent = lingerMs > 0 ? opts.urgent : undefined;
  let oldestArrivalAt = 0;
  let urgentBuffered = false;
  // A full batch means a backlog: the next one does not wait (nothing is gained, the backlog only grows).
  let lastBatchFull = false;
  let endLinger: (() => void) | undefined;
  let loop: Promise<void> | undefined;
  let stopping = false;

  async function deadLetter(msg: WorkerMsg, reason: string): Promise<void> {
    try {
      await opts.deadLetter(msg, reason);
    } catch (err) {
      // Not copied: leave it to a redelivery rather than drop it.
      opts.log.error({ err, subject: msg.subject, stream_seq: msg.seq }, 'dead-letter publish failed');
      msg.nak(retryDelayMs(msg.info.deliveryCount, opts.nakBaseMs, opts.nakMaxMs));
      return;
    }
    stats.deadLettered++;
    opts.log.error({ subject: msg.subject, stream_seq: msg.seq, deliveries: msg.info.deliveryCount, reason }, 'message dead-lettered');
    msg.term();
  }

  async function answer(msg: WorkerMsg, outcome: Outcome): Promise<void> {
    // The common case, without parsing the delivery info (a string split per message) for the verdict.
    if (outcome.kind === 'ack') return msg.ack();
    const verdict = verdictFor(outcome, msg.info.deliveryCount, opts, opts.isRetryable);
    if (verdict.action === 'ack') return msg.ack();
    if (verdict.action === 'dead_letter') return deadLetter(msg, verdict.reason);
    if (verdict.retry) {
      stats.retried++;
      const err = outcome.kind === 'fail' ? outcome.err : undefined;
      opts.log.warn({ err, subject: msg.subject, stream_seq: msg.seq, deliveries: msg.info.deliveryCount }, 'message failed, will retry');
    } else {
      stats.waited++;
    }
    msg.nak(verdict.delayMs);
  }

  /** Runs `fn` until it gets past an outage, keeping `inHand` and the buffer in progress meanwhile. */
  async function holding<T>(inHand: () => readonly WorkerMsg[], fn: () => Promise<T>): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await fn();
      } catch (err) {
        if (!opts.isOutage(err)) throw err;
        if (stopping) throw new Stopping();
        stats.held++;
        if (attempt === 1 || attempt % 20 === 0) opts.log.warn({ err, attempt }, 'dependency unavailable, holding the batch');
        for (const m of inHand()) m.working();
        for (const a of buffer) a.msg.working();
        await sleep(Math.min(retryDelayMs(attempt, OUTAGE_FIRST_WAIT_MS, OUTAGE_MAX_WAIT_MS), Math.floor(opts.ackWaitMs / 3)));
      }
    }
  }

  const failed = (err: unknown): Outcome => ({ kind: 'fail', err, reason: errorReason(err) });

  // The acks of a committed batch go out ACK_SLICE at a time, one slice per event-loop turn: the next batch
  // starts at once and its store round trips overlap them, instead of waiting behind tens of thousands of
  // acks. Still after the commit; a crash before they are out is a redelivery like any crash before an ack.
  const ackQueue: WorkerMsg[][] = [];
  let ackPos = 0;
  let ackScheduled = false;
  function ackSoon(msgs: WorkerMsg[]): void {
    if (msgs.length === 0) return;
    ackQueue.push(msgs);
    if (!ackScheduled) {
      ackScheduled = true;
      setImmediate(ackSlice);
    }
  }
  function ackUpTo(limit: number): void {
    for (let n = 0; n < limit && ackQueue.length > 0;) {
      const head = ackQueue[0] as WorkerMsg[];
      while (ackPos < head.length && n < limit) {
        (head[ackPos++] as WorkerMsg).ack();
        n++;
      }
      if (ackPos >= head.length) {
        ackQueue.shift();
        ackPos = 0;
      }
    }
  }
  function ackSlice(): void {
    ackUpTo(ACK_SLICE);
    if (ackQueue.length > 0) setImmediate(ackSlice);
    else ackScheduled = false;
  }

  /** A decoder that throws (a bug) fails that message, which is then retried like a failed handler call. */
  function arrived(msg: WorkerMsg): Arrived<V> {
    let decoded: Decoded<V>;
    try {
      decoded = opts.decode(msg);
    } catch (err) {
      return { msg, value: undefined, undecoded: { ok: false, answer: 'thrown', err } };
    }
    return decoded.ok ? { msg, value: decoded.value, undecoded: undefined } : { msg, value: undefined, undecoded: decoded };
  }

  async function runBatch<W>(
    handler: { batch: (items: Item<W>[]) => Promise<Outcome[]> },
    items: Item<W>[],
    inHand: () => readonly WorkerMsg[],
  ) {
    let outcomes: Outcome[];
    try {
      outcomes = await holding(inHand, () => handler.batch(items));
    } catch (err) {
      if (err instanceof Stopping) throw err;
      if (items.length === 1) {
        outcomes = [failed(err)];
      } else {
        opts.log.warn({ err, size: items.length }, 'batch failed, handling its messages one by one');
        outcomes = [];
        for (const item of items) {
          try {
            outcomes.push((await holding(inHand, () => handler.batch([item])))[0] ?? ACK);
          } catch (one) {
            if (one instanceof Stopping) throw one;
            outcomes.push(failed(one));
          }
        }
      }
    }
    // Acks (the common case) without a promise per message, and in slices (ackSoon).
    const acks: WorkerMsg[] = [];
    const answering: Promise<void>[] = [];
    for (let i = 0; i < items.length; i++) {
      const outcome = outcomes[i] ?? ACK;
      const msg = (items[i] as Item<W>).msg;
      if (outcome.kind === 'ack') acks.push(msg);
      else answering.push(answer(msg, outcome));
    }
    ackSoon(acks);
    await Promise.all(answering);
  }

  async function runEach<W>(
    handler: { each: (item: Item<W>) => Promise<Outcome>; concurrency: number },
    items: Item<W>[],
    inHand: () => readonly WorkerMsg[],
  ) {
    await forEachLimit(items, handler.concurrency, async (item) => {
      let outcome: Outcome;
      try {
        outcome = await inContext(item.msg, () => holding(inHand, () => handler.each(item)));
      } catch (err) {
        if (err instanceof Stopping) throw err;
        outcome = failed(err);
      }
      await answer(item.msg, outcome);
    });
  }

  async function processBatch(batch: Arrived<V>[]): Promise<void> {
    stats.batches++;
    stats.received += batch.length;
    const byKind = new Map<string, Item<V>[]>();
    for (const a of batch) {
      const { msg, undecoded } = a;
      if (undecoded === undefined) {
        const kind = (a.value as V).kind;
        let list = byKind.get(kind);
        if (!list) byKind.set(kind, (list = []));
        list.push(a as Item<V>);
      } else if (undecoded.answer === 'ack') {
        msg.ack();
      } else if (undecoded.answer === 'thrown') {
        await answer(msg, failed(undecoded.err));
      } else {
        await deadLetter(msg, undecoded.reason);
      }
    }
    // Built only if an outage hold needs it.
    let held: WorkerMsg[] | undefined;
    const inHand = () => (held ??= [...byKind.values()].flat().map((i) => i.msg));
    const done = new Set<string>();
    try {
      for (const [kind, items] of byKind) {
        const handler = opts.handlers[kind as V['kind']] as KindHandler<V>;
        if ('batch' in handler) await runBatch(handler, items, inHand);
        else await runEach(handler, items, inHand);
        done.add(kind);
      }
    } catch (err) {
      if (!(err instanceof Stopping)) throw err;
      // Stopping during an outage: hand back at once everything not yet answered.
      for (const [kind, items] of byKind) if (!done.has(kind)) for (const i of items) i.msg.nak();
    }
  }

  async function run(): Promise<void> {
    for (;;) {
      if (buffer.length === 0) {
        if (stopping) return;
        await new Promise<void>((resolve) => (wake = resolve));
        wake = undefined;
        continue;
      }
      if (stopping) {
        // Fetched but not started: back to the server for another replica or the next start.
        for (const a of buffer.splice(0)) a.msg.nak();
        return;
      }
      if (lingerMs > 0 && !urgentBuffered && !lastBatchFull && buffer.length < opts.batchSize) {
        const wait = oldestArrivalAt + lingerMs - performance.now();
        if (wait > 0) {
          await new Promise<void>((resolve) => {
            const timer = setTimeout(resolve, wait);
            endLinger = () => {
              clearTimeout(timer);
              resolve();
            };
          });
          endLinger = undefined;
          continue;
        }
      }
      const batch = buffer.splice(0, opts.batchSize);
      lastBatchFull = batch.length === opts.batchSize;
      // What stays behind arrived after the oldest of this batch: it waits at most lingerMs from that.
      urgentBuffered = urgent !== undefined && buffer.some((a) => a.value !== undefined && urgent(a.value));
      try {
        await processBatch(batch);
      } catch (err) {
        opts.log.error({ err, size: batch.length }, 'batch failed; its messages will be redelivered');
        for (const { msg } of batch) msg.nak(retryDelayMs(msg.info.deliveryCount, opts.nakBaseMs, opts.nakMaxMs));
      }
    }
  }

  return {
    stats,
    async start() {
      await opts.source.start((msg) => {
        const a = arrived(msg);
        if (buffer.length === 0) oldestArrivalAt = performance.now();
        buffer.push(a);
        if (urgent !== undefined && a.value !== undefined && urgent(a.value)) urgentBuffered = true;
        if (wake) wake();
        else if (endLinger && (urgentBuffered || buffer.length >= opts.batchSize)) endLinger();
      });
      loop = run();
    },
    async stop() {
      if (stopping) return loop;
      stopping = true;
      await opts.source.stop().catch(() => undefined);
      wake?.();
      endLinger?.();
      await loop;
      // Whatever is committed and not yet acknowledged goes out now, before the caller closes the connection.
      ackUpTo(Infinity);
    },
  };
}

function errorReason(err: unknown): string {
  if (typeof err === 'object' && err !== null && 'code' in err && typeof err.code === 'string') return `failed: ${err.code}`;
  return 'failed';
}

/** Runs `fn` over `items` with at most `limit` at once; the first rejection rejects (the rest still finish). */
async function forEachLimit<T>(items: readonly T[], limit: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const workers = Array.from({ length: Math.min(Math.max(1, limit), items.length) }, async () => {
    while (next < items.length) {
      const item = items[next++] as T;
      await fn(item);
    }
  });
  const results = await Promise.allSettled(workers);
  for (const r of results) if (r.status === 'rejected') throw r.reason;
}
