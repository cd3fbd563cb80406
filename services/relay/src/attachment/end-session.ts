import type { EndCause } from '@s2s/contract';
import { requestEnd, type SessionsContext } from '@s2s/sessions';
import type { Logger } from '@s2s/telemetry';
import { sleep } from '../backoff.js';

/** The relay ends a session (budget, upstream failure, legacy close): a few tries, then the sweeper's job. */
export async function endSessionWithRetries({
  ctx,
  input,
}: {
  ctx: SessionsContext & { log: Logger };
  input: { sessionId: string; cause: EndCause };
}): Promise<void> {
  for (const delay of [0, 200, 1000]) {
    if (delay > 0) await sleep(delay);
    try {
      await requestEnd({ ctx, input });
      return;
    } catch (err) {
      ctx.log.warn({ err, cause: input.cause }, 'end request failed');
    }
  }
  ctx.log.error({ cause: input.cause }, 'end request lost; the expiry sweeper will end the session');
}
