import type { EndCause } from '@s2s/contract';
import { expiryCause, type ExpiryClock } from '@s2s/core';
import type { SessionsContext } from './context.js';
import { requestEnd, type EndRequest } from './request-end.js';

export interface ExpiryCandidate extends ExpiryClock {
  id: string;
  /** Known to be settled or already asked to end: nothing is due (absent means not known to be). */
  settledAt?: Date | null;
  endRequestedAt?: Date | null;
}

export interface ExpiryOutcome {
  /** The deadline the session had passed when read, or null. */
  due: EndCause | null;
  /** The recorded end when one was due: null when activity undid the expiry under the lock (or it settled). */
  end: EndRequest | null;
}

/**
 * The one "is it expired → request the end" step of every reader (control plane get and end, relay attach,
 * billing sweeper). The deadline is judged at `input.now`, else ctx.now(), else the wall clock; requestEnd
 * re-checks it under the row lock by ctx.now() or the database clock, so racing activity wins.
 */
export async function expireIfDue({
  ctx,
  input,
}: {
  ctx: SessionsContext;
  input: { session: ExpiryCandidate; now?: Date };
}): Promise<ExpiryOutcome> {
  const { session } = input;
  if (session.settledAt != null || session.endRequestedAt != null) return { due: null, end: null };
  const due = expiryCause(session, input.now ?? ctx.now?.() ?? new Date());
  if (due === null) return { due, end: null };
  const end = await requestEnd({ ctx, input: { sessionId: session.id, cause: due } });
  return { due, end };
}
