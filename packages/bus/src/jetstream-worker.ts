import { headers as createHeaders } from '@nats-io/nats-core';
import type { JetStreamClient } from '@nats-io/jetstream';
import type { MessageSource, WorkerMsg } from './worker.js';

/** The part of a `Bus` the JetStream side of a worker needs. */
interface StreamClient {
  js: JetStreamClient;
  subjects: { stream: string };
}

/**
 * Messages asked for per pull request, whatever the worker's batch size. The server sends a whole pull at
 * once; a client busy with a batch reads nothing meanwhile, and past 64 MiB waiting for it the server cuts it
 * off as a slow consumer (every message in flight then comes back only after the ack wait).
 */
export const PULL_MAX_MESSAGES = 10_000;

/**
 * A durable pull consumer as a worker's message source. Its pull requests expire after half the ack wait
 * (at most 30 s): a request outlives a frozen or partitioned process until it expires, and every redelivery
 * it swallows burns a delivery, so keeping it shorter than the ack wait sends redeliveries elsewhere.
 */
export function pullSource(bus: StreamClient, opts: { durable: string; batchSize: number; ackWaitMs: number }): MessageSource {
  let close: (() => Promise<unknown>) | undefined;
  return {
    async start(onMessage) {
      const consumer = await bus.js.consumers.get(bus.subjects.stream, opts.durable);
      const messages = await consumer.consume({
        max_messages: Math.min(opts.batchSize, PULL_MAX_MESSAGES),
        expires: Math.min(30_000, Math.max(1000, Math.floor(opts.ackWaitMs / 2))),
        callback: onMessage,
      });
      close = () => messages.close();
    },
    async stop() {
      await close?.();
    },
  };
}

/**
 * Copies a message (payload and headers) to `subject` for an operator to replay: its Msg-Id kept as
 * `<prefix>-Original-Msg-Id`, plus `<prefix>-Dlq-Reason`, `-Original-Subject`, `-Stream-Seq`, `-Deliveries`.
 */
export function deadLetterTo(bus: StreamClient, subject: string, headerPrefix: string) {
  return async (msg: WorkerMsg, reason: string): Promise<void> => {
    const h = createHeaders();
    for (const key of msg.headers?.keys() ?? []) {
      const target = key.toLowerCase() === 'nats-msg-id' ? `${headerPrefix}-Original-Msg-Id` : key;
      for (const value of msg.headers?.values(key) ?? []) h.append(target, value);
    }
    h.set(`${headerPrefix}-Dlq-Reason`, reason);
    h.set(`${headerPrefix}-Original-Subject`, msg.subject);
    h.set(`${headerPrefix}-Stream-Seq`, String(msg.seq));
    h.set(`${headerPrefix}-Deliveries`, String(msg.info.deliveryCount));
    await bus.js.publish(subject, msg.data, { headers: h, msgID: `dlq:${msg.info.stream}:${msg.seq}` });
  };
}
