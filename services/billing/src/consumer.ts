import {
  AckPolicy,
  DeliverPolicy,
  createHeaders,
  decodeMessage,
  ensureDurableConsumer,
  nanos,
  supportsMultipleFilters,
  withMessageContext,
  type Bus,
  type ConsumerMessages,
  type JsMsg,
} from '@s2s/bus';
import type { SessionEndRequested, UsageCheckpoint } from '@s2s/contract';
import { isStoreUnavailableError, type DbHandle } from '@s2s/db';
import type { Logger } from '@s2s/telemetry';
import type { BillingConfig } from './config.js';
import { decideEnd, isLastDelivery, retryDelayMs } from './decide.js';
import { foldCheckpoints } from './fold.js';
import { settleSession, settledMessage, type Settlement } from './settle.js';
import { readSessionCheckpoints } from './stream-usage.js';
import { storeCheckpoints } from './usage-store.js';

export const DURABLE_NAME = 'billing';

export interface BillingDeps {
  db: DbHandle;
  bus: Bus;
  config: BillingConfig;
  logger: Logger;
  now?: () => Date;
}

/** Counters of one consumer process; logged, and read by tests and the benchmark. */
export interface BillingStats {
  received: number;
  batches: number;
  checkpoints: number;
  /** Attachments whose stored counters moved forward. */
  advanced: number;
  settled: number;
  /** Checkpoints of already-settled sessions: usage that can no longer be billed. */
  lateCheckpoints: number;
  lateAudioMs: number;
  unknownSession: number;
  unknownVersion: number;
  deadLettered: number;
  retried: number;
  waited: number;
  /** Attachments advanced by reading the stream before a settlement on the grace. */
  recovered: number;
}

export interface BillingConsumer {
  start(): Promise<void>;
  /** Stops pulling, finishes the batch in hand, hands back what is buffered, and returns. */
  stop(): Promise<void>;
  readonly stats: BillingStats;
}

type Verdict = { kind: 'ack' } | { kind: 'wait'; delayMs: number } | { kind: 'fail'; reason: string; err?: unknown };
type CheckpointWork = { kind: 'checkpoint'; msg: JsMsg; checkpoint: UsageCheckpoint };
type EndWork = { kind: 'end'; msg: JsMsg; end: SessionEndRequested };
type Work = CheckpointWork | EndWork;

const ACK: Verdict = { kind: 'ack' };

/** Thrown out of a store wait when the process is stopping; the batch is handed back to the server. */
class Stopping extends Error {}

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
    max_ack_pending: Math.max(1000, config.BATCH_SIZE * 4),
    ...filter,
  });
}

export function createBillingConsumer(deps: BillingDeps): BillingConsumer {
  const { db, bus, config, logger } = deps;
  const now = deps.now ?? (() => new Date());
  const stats: BillingStats = {
    received: 0,
    batches: 0,
    checkpoints: 0,
    advanced: 0,
    settled: 0,
    lateCheckpoints: 0,
    lateAudioMs: 0,
    unknownSession: 0,
    unknownVersion: 0,
    deadLettered: 0,
    retried: 0,
    waited: 0,
    recovered: 0,
  };
  const buffer: JsMsg[] = [];
  let wake: (() => void) | undefined;
  let messages: ConsumerMessages | undefined;
  let loop: Promise<void> | undefined;
  let stopping = false;

  const fault = (point: 'fold' | 'settle') => {
    if (config.BILLING_FAULT === 'exit_after_commit' || (config.BILLING_FAULT === 'exit_after_settle' && point === 'settle')) {
      process.exit(137);
    }
  };

  // ---- message outcomes ----

  function apply(msg: JsMsg, verdict: Verdict): Promise<void> | void {
    if (verdict.kind === 'ack') return msg.ack();
    if (verdict.kind === 'wait') {
      stats.waited++;
      return msg.nak(verdict.delayMs);
    }
    if (isLastDelivery(msg.info.deliveryCount, config.MAX_DELIVER)) return deadLetter(msg, verdict.reason);
    stats.retried++;
    logger.warn(
      { err: verdict.err, subject: msg.subject, stream_seq: msg.seq, deliveries: msg.info.deliveryCount, reason: verdict.reason },
      'billing message failed, will retry',
    );
    msg.nak(retryDelayMs(msg.info.deliveryCount, config.NAK_BASE_MS, config.NAK_MAX_MS));
  }

  /** Copies the message (payload and headers) to the dead-letter subject, then terminates it. */
  async function deadLetter(msg: JsMsg, reason: string): Promise<void> {
    const h = createHeaders();
    for (const key of msg.headers?.keys() ?? []) {
      const target = key.toLowerCase() === 'nats-msg-id' ? 'Billing-Original-Msg-Id' : key;
      for (const value of msg.headers?.values(key) ?? []) h.append(target, value);
    }
    h.set('Billing-Dlq-Reason', reason);
    h.set('Billing-Original-Subject', msg.subject);
    h.set('Billing-Stream-Seq', String(msg.seq));
    h.set('Billing-Deliveries', String(msg.info.deliveryCount));
    try {
      await bus.js.publish(bus.subjects.deadLetter, msg.data, { headers: h, msgID: `dlq:${msg.info.stream}:${msg.seq}` });
    } catch (err) {
      // Not copied: leave it to a redelivery rather than drop it.
      logger.error({ err, subject: msg.subject, stream_seq: msg.seq }, 'dead-letter publish failed');
      msg.nak(retryDelayMs(msg.info.deliveryCount, config.NAK_BASE_MS, config.NAK_MAX_MS));
      return;
    }
    stats.deadLettered++;
    logger.error(
      { subject: msg.subject, stream_seq: msg.seq, deliveries: msg.info.deliveryCount, reason },
      'billing message dead-lettered',
    );
    // No reason argument: nats-server before 2.11 does not recognise `+TERM <reason>` and keeps the message.
    msg.term();
  }

  /** Decodes one message; answers on the spot what needs no database (foreign, unknown version, malformed). */
  async function classify(msg: JsMsg): Promise<Work | undefined> {
    const s = bus.subjects;
    const isCheckpoint = msg.subject.startsWith(s.usageCheckpoint(''));
    const isEnd = msg.subject.startsWith(s.endRequested(''));
    if (!isCheckpoint && !isEnd) {
      msg.ack();
      return undefined;
    }
    const decoded = decodeMessage(msg.data);
    if (!decoded.ok) {
      if (decoded.reason === 'unknown_version') {
        stats.unknownVersion++;
        logger.warn(
          { subject: msg.subject, stream_seq: msg.seq, message: decoded.detail },
          'bus message of an unknown version acknowledged',
        );
        msg.ack();
        return undefined;
      }
      await deadLetter(msg, `malformed: ${decoded.detail}`);
      return undefined;
    }
    const m = decoded.message;
    const subjectSession = msg.subject.slice((isCheckpoint ? s.usageCheckpoint('') : s.endRequested('')).length);
    if (isCheckpoint && m.type === 'usage.checkpoint' && m.session_id === subjectSession) {
      return { kind: 'checkpoint', msg, checkpoint: m };
    }
    if (isEnd && m.type === 'session.end_requested' && m.session_id === subjectSession) return { kind: 'end', msg, end: m };
    await deadLetter(msg, 'malformed: message does not match its subject');
    return undefined;
  }

  // ---- the store, held through an outage ----

  /**
   * Runs `fn` until the database answers. While it is down the messages in hand stay in progress
   * (working), so an outage delays billing but never burns deliveries into the dead-letter subject.
   */
  async function withStore<T>(inHand: readonly JsMsg[], fn: () => Promise<T>): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await fn();
      } catch (err) {
        if (!isStoreUnavailableError(err)) throw err;
        if (stopping) throw new Stopping();
        if (attempt === 1 || attempt % 20 === 0) logger.warn({ err, attempt }, 'database unavailable, holding the batch');
        for (const m of inHand) m.working();
        for (const m of buffer) m.working();
        await pause(Math.min(retryDelayMs(attempt, 100, 2000), Math.floor(config.ACK_WAIT_MS / 3)));
      }
    }
  }

  async function publishSettled(s: Settlement): Promise<boolean> {
    try {
      await bus.publish(bus.subjects.settled(s.sessionId), settledMessage(s), `settled:${s.sessionId}`);
      return true;
    } catch (err) {
      logger.warn({ err, session_id: s.sessionId }, 'session.settled publish failed');
      return false;
    }
  }

  async function settle(sessionId: string) {
    const result = await settleSession({ ctx: { db }, input: { sessionId } });
    if (result.outcome === 'settled') {
      fault('settle');
      stats.settled++;
      logger.info(
        { session_id: sessionId, status: result.settlement.status, billed_cents: result.settlement.billedCents, usage: result.usage },
        'session settled',
      );
    }
    return result;
  }

  // ---- checkpoints ----

  async function foldAll(items: CheckpointWork[], inHand: readonly JsMsg[]): Promise<Verdict[]> {
    try {
      await foldAndSettle(items);
      return items.map(() => ACK);
    } catch (err) {
      if (isStoreUnavailableError(err) || err instanceof Stopping) throw err;
      if (items.length === 1) return [{ kind: 'fail', reason: 'checkpoint could not be stored', err }];
      // Isolate the message that breaks the batch: each checkpoint on its own.
      logger.warn({ err, size: items.length }, 'checkpoint batch failed, folding one by one');
      const verdicts: Verdict[] = [];
      for (const item of items) {
        try {
          await withStore(inHand, () => foldAndSettle([item]));
          verdicts.push(ACK);
        } catch (one) {
          if (one instanceof Stopping) throw one;
          verdicts.push({ kind: 'fail', reason: 'checkpoint could not be stored', err: one });
        }
      }
      return verdicts;
    }
  }

  async function foldAndSettle(items: CheckpointWork[]): Promise<void> {
    const newest = foldCheckpoints(items.map((i) => i.checkpoint));
    const stored = await storeCheckpoints({ ctx: { db }, input: { newest: newest.values() } });
    fault('fold');
    stats.advanced += stored.advanced;
    for (const c of newest.values()) {
      if (stored.unknownSessions.has(c.session_id)) {
        stats.unknownSession++;
        logger.warn(
          { session_id: c.session_id, attachment_id: c.attachment_id, seq: c.seq },
          'checkpoint for an unknown session acknowledged',
        );
      } else if (stored.settledSessions.has(c.session_id)) {
        stats.lateCheckpoints++;
      } else if (stored.foreignAttachments.has(c.attachment_id)) {
        logger.error(
          { session_id: c.session_id, attachment_id: c.attachment_id },
          'checkpoint names an attachment of another session; ignored',
        );
      }
    }
    for (const [sessionId, ms] of stored.unbilledAudioMs) {
      stats.lateAudioMs += ms;
      logger.warn({ session_id: sessionId, unbilled_audio_ms: ms }, 'checkpoint after settlement acknowledged; its usage is not billed');
    }
    for (const sessionId of stored.readyToSettle) {
      try {
        const result = await settle(sessionId);
        if (result.outcome === 'settled') await publishSettled(result.settlement);
      } catch (err) {
        if (isStoreUnavailableError(err)) throw err;
        // The end message is still pending and settles it on its next delivery.
        logger.error({ err, session_id: sessionId }, 'settlement after final checkpoint failed');
      }
    }
  }

  // ---- end requests ----

  /** Before settling on an end request: fold whatever the stream holds for the session (idempotent). */
  async function foldFromStream(sessionId: string): Promise<void> {
    const checkpoints = await readSessionCheckpoints(bus, sessionId);
    if (checkpoints.length === 0) return;
    const newest = [...foldCheckpoints(checkpoints).values()];
    let advanced = 0;
    try {
      advanced = (await storeCheckpoints({ ctx: { db }, input: { newest } })).advanced;
    } catch (err) {
      if (isStoreUnavailableError(err)) throw err;
      // One attachment at a time, so a poison checkpoint (dead-lettered on its own) blocks nothing else.
      for (const c of newest) {
        try {
          advanced += (await storeCheckpoints({ ctx: { db }, input: { newest: [c] } })).advanced;
        } catch (one) {
          if (isStoreUnavailableError(one)) throw one;
          logger.error(
            { err: one, session_id: sessionId, attachment_id: c.attachment_id },
            'checkpoint from the stream could not be stored',
          );
        }
      }
    }
    if (advanced > 0) {
      stats.recovered += advanced;
      logger.warn({ session_id: sessionId, attachments: advanced }, 'usage not yet folded recovered from the stream before settling');
    }
  }

  async function handleEnd(item: EndWork): Promise<Verdict> {
    const sessionId = item.end.session_id;
    const { rows } = await db.pool.query<{ settled_at: Date | null; end_requested_at: Date | null; all_final: boolean }>(
      `SELECT s.settled_at, s.end_requested_at,
              NOT EXISTS (SELECT 1 FROM session_attachments a WHERE a.session_id = s.id AND NOT a.final) AS all_final
         FROM voice_sessions s WHERE s.id = $1`,
      [sessionId],
    );
    const s = rows[0];
    if (!s) {
      stats.unknownSession++;
      logger.warn({ session_id: sessionId }, 'end request for an unknown session acknowledged');
      return ACK;
    }
    if (!s.end_requested_at) {
      logger.error({ session_id: sessionId }, 'end message without a recorded end request; acknowledged');
      return ACK;
    }
    const decision = decideEnd({
      settled: s.settled_at !== null,
      allFinal: s.all_final,
      endRequestedAt: s.end_requested_at,
      now: now(),
      graceMs: config.END_GRACE_MS,
      deliveryCount: item.msg.info.deliveryCount,
      maxDeliver: config.MAX_DELIVER,
    });
    if (decision.action === 'wait') return { kind: 'wait', delayMs: decision.delayMs };
    // Also when every known attachment is final: an attachment whose row a lost checkpoint would create.
    if (decision.action === 'settle') await foldFromStream(sessionId);
    const result = await settle(sessionId);
    if (result.outcome === 'not_found' || result.outcome === 'not_requested') return ACK;
    // Re-announcing an earlier settlement covers a publish lost to a crash between commit and publish.
    const published = await publishSettled(result.settlement);
    if (published || isLastDelivery(item.msg.info.deliveryCount, config.MAX_DELIVER)) return ACK;
    return { kind: 'wait', delayMs: retryDelayMs(item.msg.info.deliveryCount, config.NAK_BASE_MS, config.NAK_MAX_MS) };
  }

  // ---- the batch ----

  async function processBatch(batch: JsMsg[]): Promise<void> {
    stats.batches++;
    stats.received += batch.length;
    const work: Work[] = [];
    for (const msg of batch) {
      const w = await classify(msg);
      if (w) work.push(w);
    }
    const inHand = work.map((w) => w.msg);
    const checkpoints = work.filter((w): w is CheckpointWork => w.kind === 'checkpoint');
    const ends = work.filter((w): w is EndWork => w.kind === 'end');
    try {
      if (checkpoints.length > 0) {
        stats.checkpoints += checkpoints.length;
        const verdicts = await withStore(inHand, () => foldAll(checkpoints, inHand));
        await Promise.all(checkpoints.map((c, i) => apply(c.msg, verdicts[i] ?? ACK)));
      }
      await forEachLimit(ends, config.SETTLE_CONCURRENCY, async (item) => {
        const verdict = await withMessageContext(item.msg.headers, async () => {
          try {
            return await withStore(inHand, () => handleEnd(item));
          } catch (err) {
            if (err instanceof Stopping) throw err;
            return { kind: 'fail', reason: 'end request could not be settled', err } satisfies Verdict;
          }
        });
        await apply(item.msg, verdict);
      });
    } catch (err) {
      if (!(err instanceof Stopping)) throw err;
      // Stopping during an outage: hand everything not yet answered back at once.
      for (const m of inHand) m.nak();
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
        // What was fetched but not started goes back to the server for another replica or the next start.
        for (const m of buffer.splice(0)) m.nak();
        return;
      }
      const batch = buffer.splice(0, config.BATCH_SIZE);
      try {
        await processBatch(batch);
      } catch (err) {
        logger.error({ err, size: batch.length }, 'billing batch failed; its messages will be redelivered');
        for (const m of batch) m.nak(retryDelayMs(m.info.deliveryCount, config.NAK_BASE_MS, config.NAK_MAX_MS));
      }
    }
  }

  return {
    stats,
    async start() {
      await ensureBillingConsumer(bus, config);
      const consumer = await bus.js.consumers.get(bus.subjects.stream, DURABLE_NAME);
      messages = await consumer.consume({
        max_messages: config.BATCH_SIZE,
        // A pull request outlives a frozen or partitioned process until it expires, and every redelivery it
        // swallows burns a delivery: keeping it shorter than the ack wait sends redeliveries elsewhere.
        expires: Math.min(30_000, Math.max(1000, Math.floor(config.ACK_WAIT_MS / 2))),
        callback: (m) => {
          buffer.push(m);
          wake?.();
        },
      });
      loop = run();
    },
    async stop() {
      if (stopping) return loop;
      stopping = true;
      await messages?.close().catch(() => undefined);
      wake?.();
      await loop;
    },
  };
}

function pause(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Runs `fn` over `items` with at most `limit` at once. */
async function forEachLimit<T>(items: readonly T[], limit: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const workers = Array.from({ length: Math.min(limit, items.length) }, async () => {
    while (next < items.length) {
      const item = items[next++] as T;
      await fn(item);
    }
  });
  await Promise.all(workers);
}
