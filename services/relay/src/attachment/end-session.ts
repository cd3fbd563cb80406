import type { EndCause } from '@s2s/contract';
import { retry } from '@s2s/core';
import { requestEnd, type SessionsContext } from '@s2s/sessions';
import type { Logger } from '@s2s/telemetry';

/** The relay ends a session (budget, upstream failure, legacy close): a few tries, then the sweeper's job. */
export async function endSessionWithRetries({
  ctx,
  input,
}: {
  ctx: SessionsContext & { log: Logger };
  input: { sessionId: string; cause: EndCause };
}): Promise<void> {
  const end = () =>
    requestEnd({ ctx, input }).catch((err: unknown) => {
      ctx.log.warn({ err, cause: input.cause }, 'end request failed');
      throw err;
    });
  await retry(end, { attempts: 3, baseMs: 200, capMs: 1000 }).catch(() =>
    ctx.log.error({ cause: input.cause }, 'end request lost; the expiry sweeper will end the session'),
  );
}
