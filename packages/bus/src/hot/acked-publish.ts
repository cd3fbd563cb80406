import {
  createInbox,
  headers as natsHeaders,
  NoRespondersError,
  TimeoutError,
  type Msg,
  type MsgHdrs,
  type NatsConnection,
  type Subscription,
} from '@nats-io/nats-core';
import { JetStreamApiError, type PubAck } from '@nats-io/jetstream';

/** JetStream's answer to a publish: a PubAck, or an API error. */
interface PubAckReply {
  stream?: string;
  seq?: number;
  duplicate?: boolean;
  domain?: string;
  error?: { code: number; err_code: number; description: string };
}

interface Pending {
  resolve(ack: PubAck): void;
  reject(err: Error): void;
  subject: string;
  /** performance.now() when the answer is overdue. */
  deadline: number;
}

/** How often overdue publishes are looked for: a timeout fires within this much of its due time. */
const SWEEP_MS = 250;
const decoder = new TextDecoder();

/**
 * JetStream publishes acknowledged through one wildcard reply subscription instead of a request each: the same
 * wire exchange as `js.publish` (the message with a reply subject, the stream's PubAck sent there, Msg-Id
 * deduplication), without what nats.js makes per request: a request object with its random token, a timer, a
 * `RequestError` with its stack on every success (`RequestOne.cancel`), a fresh TextDecoder for the ack. One
 * timer for every publish in flight rejects those unanswered after `timeoutMs`.
 */
export class AckedPublisher {
  private readonly prefix: string;
  private readonly sub: Subscription;
  private readonly pending = new Map<string, Pending>();
  private readonly timer: NodeJS.Timeout;
  private next = 0;

  constructor(
    private readonly nc: NatsConnection,
    private readonly timeoutMs = 5000,
  ) {
    this.prefix = `${createInbox()}.`;
    this.sub = nc.subscribe(`${this.prefix}*`, { callback: (err, msg) => (err ? undefined : this.answered(msg)) });
    this.timer = setInterval(() => this.sweep(), Math.min(SWEEP_MS, timeoutMs));
    this.timer.unref();
  }

  /** Publishes in flight (not yet answered nor timed out). */
  get inFlight(): number {
    return this.pending.size;
  }

  /**
   * Publishes `data` on `subject` with a Msg-Id, the `base` headers (e.g. trace context) copied first; resolves
   * with the stream's PubAck, rejects on an error answer, no stream on the subject, or no answer in time.
   */
  publish(subject: string, data: Uint8Array | string, msgId: string, base?: MsgHdrs): Promise<PubAck> {
    const h = natsHeaders();
    if (base) for (const k of base.keys()) h.set(k, base.get(k));
    h.set('Nats-Msg-Id', msgId);
    const token = (this.next++).toString(36);
    return new Promise<PubAck>((resolve, reject) => {
      this.pending.set(token, { resolve, reject, subject, deadline: performance.now() + this.timeoutMs });
      try {
        this.nc.publish(subject, data, { reply: this.prefix + token, headers: h });
      } catch (err) {
        this.pending.delete(token);
        reject(err as Error);
      }
    });
  }

  /** Stops listening; what is still in flight is rejected. */
  close(): void {
    clearInterval(this.timer);
    if (!this.nc.isClosed()) this.sub.unsubscribe();
    for (const p of this.pending.values()) p.reject(new Error('acknowledged publisher closed'));
    this.pending.clear();
  }

  private answered(msg: Msg): void {
    const token = msg.subject.slice(this.prefix.length);
    const p = this.pending.get(token);
    if (!p) return;
    this.pending.delete(token);
    // No responders: the server's 503 status, empty (no stream takes the subject).
    if (msg.data.length === 0 && msg.headers?.code === 503) {
      p.reject(new NoRespondersError(p.subject));
      return;
    }
    let reply: PubAckReply;
    try {
      reply = JSON.parse(decoder.decode(msg.data)) as PubAckReply;
    } catch {
      p.reject(new Error('invalid ack response'));
      return;
    }
    if (reply.error) p.reject(new JetStreamApiError(reply.error));
    else if (typeof reply.stream !== 'string' || reply.stream === '' || typeof reply.seq !== 'number')
      p.reject(new Error('invalid ack response'));
    else p.resolve({ stream: reply.stream, seq: reply.seq, duplicate: reply.duplicate === true, domain: reply.domain } as PubAck);
  }

  /** Map order is publish order: the overdue ones are at the front. */
  private sweep(): void {
    if (this.pending.size === 0) return;
    const now = performance.now();
    for (const [token, p] of this.pending) {
      if (p.deadline > now) break;
      this.pending.delete(token);
      p.reject(new TimeoutError());
    }
  }
}
