import { decodeMessage, type Bus } from '@s2s/bus';
import type { UsageCheckpoint } from '@s2s/contract';

const CHUNK = 5000;

/**
 * Every checkpoint of a session still in the stream, read with a short-lived ordered consumer on its
 * subject. A settlement on an end request folds these first, so checkpoints a crashed replica held
 * unacknowledged, or that ran out of deliveries, still count: the stream, not the durable consumer's
 * progress, is the record of what was published.
 */
export async function readSessionCheckpoints(bus: Bus, sessionId: string): Promise<UsageCheckpoint[]> {
  const subject = bus.subjects.usageCheckpoint(sessionId);
  const info = await bus.jsm.streams.info(bus.subjects.stream, { subjects_filter: subject });
  let remaining = info.state.subjects?.[subject] ?? 0;
  if (remaining === 0) return [];
  const consumer = await bus.js.consumers.get(bus.subjects.stream, { filter_subjects: subject });
  const found: UsageCheckpoint[] = [];
  try {
    while (remaining > 0) {
      const want = Math.min(remaining, CHUNK);
      const batch = await consumer.fetch({ max_messages: want, expires: 2000 });
      let got = 0;
      for await (const m of batch) {
        got++;
        const decoded = decodeMessage(m.data);
        if (decoded.ok && decoded.message.type === 'usage.checkpoint' && decoded.message.session_id === sessionId) {
          found.push(decoded.message);
        }
      }
      // Fewer than asked: old messages aged out meanwhile; nothing is ever added before the end of the stream.
      if (got < want) break;
      remaining -= got;
    }
  } finally {
    // Ordered consumers otherwise linger on the server for minutes.
    await consumer.delete().catch(() => undefined);
  }
  return found;
}
