import type { UsageCheckpoint } from '@s2s/contract';
import { isStoreUnavailableError } from '@s2s/db';
import { context, type Context } from '@s2s/telemetry';
import { foldCheckpoints } from '../fold.js';
import { storeCheckpoints } from '../usage-store.js';
import type { BillingContext } from './context.js';
import { settleAndAnnounce } from './settle-and-announce.js';

/**
 * The checkpoint handler: folds a batch to the newest checkpoint of each attachment, stores it in one
 * transaction, and settles at once the ended sessions whose every attachment is now final. Throws when
 * the batch cannot be stored (the worker then holds it through an outage, or isolates a poison message).
 */
export async function foldCheckpointBatch({
  ctx,
  input,
}: {
  ctx: BillingContext;
  input: {
    checkpoints: UsageCheckpoint[];
    /** The trace a session's checkpoints came in (its attachment's): a settlement they cause is traced there. */
    traceOf?: (sessionId: string) => Context | undefined;
  };
}): Promise<void> {
  ctx.counters.checkpoints += input.checkpoints.length;
  const started = performance.now();
  const newest = foldCheckpoints(input.checkpoints);
  const stored = await storeCheckpoints({ ctx, input: { newest: newest.values() } });
  ctx.log.debug(
    {
      checkpoints: input.checkpoints.length,
      attachments: newest.size,
      advanced: stored.advanced,
      ms: Math.round(performance.now() - started),
    },
    'checkpoints folded',
  );
  ctx.faults?.afterFoldCommit?.();
  ctx.telemetry.checkpointsFolded(input.checkpoints.length);
  ctx.counters.advanced += stored.advanced;
  for (const c of newest.values()) {
    if (stored.unknownSessions.has(c.session_id)) {
      ctx.counters.unknownSession++;
      ctx.log.warn(
        { session_id: c.session_id, attachment_id: c.attachment_id, seq: c.seq },
        'checkpoint for an unknown session acknowledged',
      );
    } else if (stored.settledSessions.has(c.session_id)) {
      ctx.counters.lateCheckpoints++;
    } else if (stored.foreignAttachments.has(c.attachment_id)) {
      ctx.log.error(
        { session_id: c.session_id, attachment_id: c.attachment_id },
        'checkpoint names an attachment of another session; ignored',
      );
    }
  }
  for (const [sessionId, ms] of stored.unbilledAudioMs) {
    ctx.counters.lateAudioMs += ms;
    ctx.log.warn({ session_id: sessionId, unbilled_audio_ms: ms }, 'checkpoint after settlement acknowledged; its usage is not billed');
  }
  for (const sessionId of stored.readyToSettle) {
    try {
      await context.with(input.traceOf?.(sessionId) ?? context.active(), () => settleAndAnnounce({ ctx, input: { sessionId } }));
    } catch (err) {
      if (isStoreUnavailableError(err)) throw err;
      // The end message is still pending and settles it on its next delivery.
      ctx.log.error({ err, session_id: sessionId }, 'settlement after final checkpoint failed');
    }
  }
}
