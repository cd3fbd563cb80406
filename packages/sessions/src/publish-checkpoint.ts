import type { Bus } from '@s2s/bus';
import type { UsageCheckpoint } from '@s2s/contract';
import { usageCheckpointMsgId } from '@s2s/core';

/** Publishes one attachment's cumulative usage (architecture.md, Bus); billing folds the newest `seq`. */
export async function publishUsageCheckpoint({ ctx, input }: { ctx: { bus: Bus }; input: UsageCheckpoint }): Promise<void> {
  await ctx.bus.publish(ctx.bus.subjects.usageCheckpoint(input.session_id), input, usageCheckpointMsgId(input));
}
