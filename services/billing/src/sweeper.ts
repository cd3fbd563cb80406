import type { Bus } from '@s2s/bus';
import { EndCause, TerminalStatus } from '@s2s/contract';
import { IDEMPOTENCY_RETENTION_HOURS } from '@s2s/core';
import { announceEnd, expireIfDue, requestEnd, sessionActivitySql } from '@s2s/sessions';
import { sqlStatement, type DbHandle } from '@s2s/db';
import type { Logger } from '@s2s/telemetry';
import { z } from 'zod';
import { upForMs, watchStore, type Availability } from './availability.js';
import type { BillingConfig } from './config.js';

export interface SweepResult {
  expired: number;
  /** Calls ended because the relay holding them is gone (`relay_lost`). */
  lost: number;
  reannounced: number;
  idempotencyKeysDeleted: number;
}

export interface Sweeper {
  start(): void;
  stop(): Promise<void>;
  /** One pass; exported for tests. */
  sweepOnce(): Promise<SweepResult>;
}

const DUE_SESSIONS = sqlStatement(import.meta.url, {
  // A session's activity is never before its own last_activity_at: only those idle by it are looked at further.
  text: `SELECT id, last_activity_at, idle_timeout_seconds, max_ends_at, now() AS now
         FROM (SELECT s.id, ${sessionActivitySql('s')} AS last_activity_at, s.idle_timeout_seconds, s.max_ends_at
                 FROM voice_sessions s
                WHERE s.settled_at IS NULL AND s.end_requested_at IS NULL
                  AND (s.max_ends_at <= now() OR s.last_activity_at + make_interval(secs => s.idle_timeout_seconds) <= now())) c
        WHERE max_ends_at <= now() OR last_activity_at + make_interval(secs => idle_timeout_seconds) <= now()
        ORDER BY least(max_ends_at, last_activity_at + make_interval(secs => idle_timeout_seconds))
        LIMIT $1`,
  row: z.object({ id: z.string(), last_activity_at: z.date(), idle_timeout_seconds: z.number(), max_ends_at: z.date(), now: z.date() }),
});

const LOST_CALLS = sqlStatement(import.meta.url, {
  text: `SELECT s.id, a.id AS attachment_id, a.relay_id, a.transport
         FROM voice_sessions s
        CROSS JOIN LATERAL (SELECT a.id, a.relay_id, a.transport, a.started_at FROM session_attachments a
                             WHERE a.session_id = s.id ORDER BY a.started_at DESC, a.id COLLATE "C" DESC LIMIT 1) a
         LEFT JOIN relay_leases l ON l.relay_id = a.relay_id
        WHERE s.settled_at IS NULL AND s.end_requested_at IS NULL AND a.transport <> 'websocket'
          AND (l.expires_at <= now()
               OR (l.relay_id IS NULL AND a.started_at <= now() - make_interval(secs => $1::float8 / 1000)))
        LIMIT $2`,
  row: z.object({ id: z.string(), attachment_id: z.string(), relay_id: z.string(), transport: z.string() }),
});

const UNANNOUNCED_ENDS = sqlStatement(import.meta.url, {
  text: `SELECT id, end_cause, terminal_status, end_requested_at, trace_id
         FROM voice_sessions
        WHERE settled_at IS NULL AND end_requested_at IS NOT NULL AND end_cause IS NOT NULL AND terminal_status IS NOT NULL
          AND end_requested_at <= now() - make_interval(secs => $1::float8 / 1000)
        ORDER BY end_requested_at
        LIMIT $2`,
  row: z.object({ id: z.string(), end_cause: EndCause, terminal_status: TerminalStatus, end_requested_at: z.date(), trace_id: z.string() }),
});

/**
 * Expires idle and over-long sessions, ends calls whose relay is gone (a phone stream or a WebRTC call never
 * reattaches: docs/billing.md, "Calls whose relay is gone"), re-announces ends that were recorded but never settled (a publish
 * lost to a crash or a broker outage), and purges old idempotency keys. Every action is idempotent
 * (requestEnd's first cause wins, settlement dedups), so any number of replicas may sweep at once.
 */
export function createSweeper(deps: {
  db: DbHandle;
  bus: Bus;
  config: BillingConfig;
  logger: Logger;
  /** The store's outage clock (the lease rule's); by default its own probe every STORE_PROBE_MS. */
  store?: Availability;
}): Sweeper {
  const { db, bus, config, logger } = deps;
  const ownStore = deps.store === undefined;
  const store = deps.store ?? watchStore(db, config.STORE_PROBE_MS);
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<unknown> | undefined;
  let stopped = false;

  async function expire(): Promise<number> {
    const { rows } = await DUE_SESSIONS.run(db.pool, [config.SWEEP_LIMIT]);
    let n = 0;
    for (const r of rows) {
      const session = {
        id: r.id,
        lastActivityAt: r.last_activity_at,
        idleTimeoutSeconds: r.idle_timeout_seconds,
        maxEndsAt: r.max_ends_at,
      };
      try {
        const { due, end } = await expireIfDue({ ctx: { db, bus }, input: { session, now: r.now } });
        if (end?.first) {
          n++;
          logger.info({ session_id: r.id, cause: due }, 'session expired');
        }
      } catch (err) {
        // An end recorded but not announced is re-announced by a later sweep.
        logger.warn({ err, session_id: r.id }, 'expiring a session failed');
      }
    }
    return n;
  }

  /**
   * Ends (`relay_lost`) each session whose newest attachment cannot reattach (not a WebSocket) and whose relay
   * is gone by the lease rule: lease expired while the store was up to billing for a whole TTL, or no lease
   * row (a clean exit) for an attachment older than a TTL (a relay's first renewal may trail its first
   * attach). Settlement then takes the attachment's last checkpoint after the grace, as for any gone relay.
   */
  async function endLostCalls(): Promise<number> {
    if (upForMs(store, new Date()) < config.RELAY_LEASE_TTL_MS) return 0;
    const { rows } = await LOST_CALLS.run(db.pool, [config.RELAY_LEASE_TTL_MS, config.SWEEP_LIMIT]);
    let n = 0;
    for (const r of rows) {
      try {
        const end = await requestEnd({ ctx: { db, bus }, input: { sessionId: r.id, cause: 'relay_lost', whileNewest: r.attachment_id } });
        if (end?.first) {
          n++;
          logger.warn(
            { session_id: r.id, attachment_id: r.attachment_id, relay_id: r.relay_id, transport: r.transport },
            'call ended: its relay is gone',
          );
        }
      } catch (err) {
        logger.warn({ err, session_id: r.id }, 'ending a call whose relay is gone failed');
      }
    }
    return n;
  }

  async function reannounce(): Promise<number> {
    const { rows } = await UNANNOUNCED_ENDS.run(db.pool, [config.END_GRACE_MS * 2, config.SWEEP_LIMIT]);
    let n = 0;
    for (const r of rows) {
      try {
        await announceEnd({
          ctx: { bus },
          input: {
            sessionId: r.id,
            cause: r.end_cause,
            terminalStatus: r.terminal_status,
            requestedAt: r.end_requested_at,
            traceId: r.trace_id,
          },
        });
        n++;
      } catch (err) {
        logger.warn({ err, session_id: r.id }, 're-announcing an end request failed');
      }
    }
    if (n > 0) logger.warn({ sessions: n }, 'unsettled end requests re-announced');
    return n;
  }

  async function purgeIdempotencyKeys(): Promise<number> {
    const { rowCount } = await db.pool.query(
      `DELETE FROM idempotency_keys WHERE ctid = ANY(ARRAY(
         SELECT ctid FROM idempotency_keys WHERE created_at < now() - make_interval(hours => $1) LIMIT $2))`,
      [IDEMPOTENCY_RETENTION_HOURS, config.SWEEP_LIMIT],
    );
    return rowCount ?? 0;
  }

  async function sweepOnce(): Promise<SweepResult> {
    const expired = await expire();
    const lost = await endLostCalls();
    const reannounced = await reannounce();
    const idempotencyKeysDeleted = await purgeIdempotencyKeys();
    return { expired, lost, reannounced, idempotencyKeysDeleted };
  }

  function schedule() {
    if (stopped) return;
    timer = setTimeout(() => {
      running = sweepOnce()
        .catch((err: unknown) => logger.error({ err }, 'sweep failed'))
        .finally(schedule);
    }, config.SWEEP_INTERVAL_MS);
  }

  return {
    sweepOnce,
    start() {
      stopped = false;
      schedule();
    },
    async stop() {
      stopped = true;
      clearTimeout(timer);
      if (ownStore) store.stop();
      await running;
    },
  };
}
