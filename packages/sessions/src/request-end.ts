import type { Bus } from '@s2s/bus';
import { EndCause, SessionStatus, TerminalStatus } from '@s2s/contract';
import { AppError, expiryCause, terminalStatusFor } from '@s2s/core';
import { sqlStatement, withTransaction, type Sql } from '@s2s/db';
import { traceHeaders } from '@s2s/bus';
import { SPAN_ATTRS, SpanKind, failSpan, gatewayTracer, startSessionSpan, type Context } from '@s2s/telemetry';
import { lockedSessionActivity } from './activity.js';
import { z } from 'zod';
import type { SessionsContext } from './context.js';

const LOCK_SESSION = sqlStatement(import.meta.url, {
  text: `SELECT status, end_requested_at, end_cause, terminal_status, settled_at,
              last_activity_at, idle_timeout_seconds, max_ends_at, now() AS db_now, trace_id
         FROM voice_sessions WHERE id = $1 FOR UPDATE`,
  row: z.object({
    status: SessionStatus,
    end_requested_at: z.date().nullable(),
    end_cause: EndCause.nullable(),
    terminal_status: TerminalStatus.nullable(),
    settled_at: z.date().nullable(),
    last_activity_at: z.date(),
    idle_timeout_seconds: z.number(),
    max_ends_at: z.date(),
    db_now: z.date(),
    trace_id: z.string(),
  }),
});
type LockedSession = z.infer<typeof LOCK_SESSION.row>;

const RECORD_END = sqlStatement(import.meta.url, {
  text: `UPDATE voice_sessions SET end_requested_at = now(), end_cause = $2, terminal_status = $3
        WHERE id = $1 RETURNING end_requested_at`,
  row: z.object({ end_requested_at: z.date() }),
});

const NEWEST_ATTACHMENT = sqlStatement(import.meta.url, {
  text: `SELECT id FROM session_attachments WHERE session_id = $1 ORDER BY started_at DESC, id COLLATE "C" DESC LIMIT 1`,
  row: z.object({ id: z.string() }),
});

const EXPIRY_CAUSES: ReadonlySet<EndCause> = new Set(['idle_timeout', 'max_duration']);

function stillExpired(s: LockedSession, now: Date): boolean {
  const clock = { lastActivityAt: s.last_activity_at, idleTimeoutSeconds: s.idle_timeout_seconds, maxEndsAt: s.max_ends_at };
  return expiryCause(clock, now) !== null;
}

export interface EndRequest {
  sessionId: string;
  cause: EndCause;
  terminalStatus: TerminalStatus;
  requestedAt: Date;
  /** The session's trace (its create request's): the announcement is published in it. */
  traceId: string | null;
  /** False when an earlier end request (whose cause wins) was already recorded. */
  first: boolean;
}

/**
 * Records that a session must end (the first cause wins) and announces it on the bus so that the relay
 * holding it stops and billing settles it. An expiry cause only takes effect if the session is still
 * expired under the row lock (by `input.now`, else ctx.now(), else the database clock); otherwise null.
 * Safe to repeat: the announcement has a fixed Msg-Id and the billing sweeper re-announces unsettled ends.
 */
export async function requestEnd({
  ctx,
  input,
}: {
  ctx: Pick<SessionsContext, 'db' | 'bus' | 'now'>;
  /**
   * `trace`: the context of what asked for the end (default: the active one), see `announceEnd`.
   * `whileNewest`: only while this attachment is still the session's newest (under the lock, which an attach
   * also takes): an end decided from a lost holder does not end a session that has moved on.
   */
  input: { sessionId: string; cause: EndCause; now?: Date; trace?: Context; whileNewest?: string };
}): Promise<EndRequest | null> {
  const { sessionId, cause } = input;
  const now = input.now ?? ctx.now?.();
  const decided = await withTransaction(ctx, async (tx) => {
    const { rows } = await LOCK_SESSION.run(tx, [sessionId]);
    const s = rows[0];
    if (!s) return null;
    if (s.end_requested_at && s.end_cause && s.terminal_status) {
      return { cause: s.end_cause, terminalStatus: s.terminal_status, requestedAt: s.end_requested_at, traceId: s.trace_id, first: false };
    }
    if (s.settled_at) return null;
    // An expiry decided from an earlier read must still hold under the lock: activity may have moved it.
    if (EXPIRY_CAUSES.has(cause)) {
      const lastActivityAt = await lockedSessionActivity(tx, sessionId, s.last_activity_at);
      if (!stillExpired({ ...s, last_activity_at: lastActivityAt }, now ?? s.db_now)) return null;
    }
    if (input.whileNewest !== undefined && (await newestAttachment(tx, sessionId)) !== input.whileNewest) return null;
    const terminalStatus = terminalStatusFor(cause, s.status);
    const updated = await RECORD_END.run(tx, [sessionId, cause, terminalStatus]);
    const row = updated.rows[0];
    if (!row) throw new AppError('internal_error', 'end request lost its row');
    return { cause, terminalStatus, requestedAt: row.end_requested_at, traceId: s.trace_id, first: true };
  });
  if (!decided) return null;
  await announceEnd({ ctx, input: { sessionId, ...decided, ...(input.trace ? { trace: input.trace } : {}) } });
  return { sessionId, ...decided };
}

/** The session's newest attachment, in the order the announcements use ((started_at, id) highest). */
async function newestAttachment(tx: Sql, sessionId: string): Promise<string | null> {
  const { rows } = await NEWEST_ATTACHMENT.run(tx, [sessionId]);
  return rows[0]?.id ?? null;
}

const tracer = gatewayTracer('sessions');

/**
 * Publishes `session.end_requested` in a producer span of the session's trace (so billing's settlement
 * lands there too); its Msg-Id is fixed per session, so a repeat is a duplicate. The span is a child of
 * `input.trace` (default: the active context) when that is in the session's trace, else linked to it; the
 * context is passed, never entered (a relay that never enters AsyncLocalStorage keeps async hooks off).
 */
export async function announceEnd({
  ctx,
  input,
}: {
  ctx: { bus: Bus };
  input: Omit<EndRequest, 'first'> & { trace?: Context };
}): Promise<void> {
  const { bus } = ctx;
  const attributes = {
    [SPAN_ATTRS.messagingSystem]: 'nats',
    [SPAN_ATTRS.messagingOperation]: 'publish',
    [SPAN_ATTRS.sessionId]: input.sessionId,
    [SPAN_ATTRS.endCause]: input.cause,
  };
  const { span, context } = startSessionSpan(
    tracer,
    'publish session.end_requested',
    input.traceId,
    { kind: SpanKind.PRODUCER, attributes },
    input.trace,
  );
  try {
    await bus.publish(
      bus.subjects.endRequested(input.sessionId),
      {
        type: 'session.end_requested',
        version: 1,
        session_id: input.sessionId,
        cause: input.cause,
        terminal_status: input.terminalStatus,
        requested_at: input.requestedAt.getTime(),
      },
      `end:${input.sessionId}`,
      traceHeaders(context),
    );
  } catch (err) {
    failSpan(span, err);
    throw err;
  } finally {
    span.end();
  }
}
