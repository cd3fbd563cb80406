import type { UsageCheckpoint } from '@s2s/contract';
import type { Bus } from '@s2s/bus';

/** Msg-Id of a checkpoint: a republished checkpoint (a retry) is a duplicate JetStream drops. */
export function usageCheckpointMsgId(c: Pick<UsageCheckpoint, 'attachment_id' | 'seq'>): string {
  return `${c.attachment_id}:${c.seq}`;
}

/** Publishes one attachment's cumulative usage (architecture.md, Bus); billing folds the newest `seq`. */
export async function publishUsageCheckpoint(bus: Bus, checkpoint: UsageCheckpoint): Promise<void> {
  await bus.publish(bus.subjects.usageCheckpoint(checkpoint.session_id), checkpoint, usageCheckpointMsgId(checkpoint));
}
