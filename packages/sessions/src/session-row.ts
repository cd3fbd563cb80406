import {
  Capabilities,
  CheckpointRoute,
  ModelRoute,
  RealtimeSessionSettings,
  type EndCause,
  type SessionStatus,
  type TerminalStatus,
} from '@s2s/contract';
import { USAGE_COUNTERS, usageByProvider, type SessionRecord } from '@s2s/core';
import { rateColumns, rateFromRow, rateRowShape, sqlStatement, usageFromRow, usageRowShape, usageSums, type Sql } from '@s2s/db';
import { z } from 'zod';

/**
 * Reads a session only when `keyId` owns it, so usage and billing fields are never read for anyone else.
 * Before settlement the usage is the sum of the attachments' newest checkpoints; after, the settled figures.
 */
export async function selectOwnedSession(sql: Sql, sessionId: string, keyId: string): Promise<SessionRecord | null> {
  const { rows } = await OWNED_SESSION.run(sql, [sessionId, keyId]);
  const row = rows[0];
  return row ? toRecord(row) : null;
}

const SESSION_SELECT = `
    SELECT s.id, s.key_id, s.wallet_id, s.status, s.model_id, m.provider, m.provider_model, m.fallback_routes, m.capabilities,
           s.rate_snapshot_id, r.source, ${rateColumns('r')},
           s.created_at, greatest(s.last_activity_at, u.last_audio_at) AS last_activity_at, s.idle_timeout_seconds, s.max_ends_at,
           s.preauthorized_cents, s.reserved_cents, (w.balance_cents - w.reserved_cents)::float8 AS available_cents,
           ${USAGE_COUNTERS.map((c) => `(CASE WHEN s.settled_at IS NULL THEN coalesce(u.${c}, 0) ELSE s.${c} END)::float8 AS ${c}`).join(',\n           ')},
           s.billed_cents, s.trace_id, s.end_requested_at, s.end_cause, s.terminal_status, s.settled_at, s.legacy,
           s.ends_with_socket, s.initial_settings, ar.attachment_routes
      FROM voice_sessions s
      JOIN catalog_models m ON m.id = s.model_id
      JOIN rate_snapshots r ON r.id = s.rate_snapshot_id
      JOIN wallets w ON w.id = s.wallet_id
      LEFT JOIN LATERAL (
        SELECT ${usageSums('a')}, max(a.last_audio_at) AS last_audio_at FROM session_attachments a WHERE a.session_id = s.id
      ) u ON s.settled_at IS NULL
      CROSS JOIN LATERAL (
        SELECT coalesce(jsonb_agg(a.routes ORDER BY a.started_at, a.id), '[]'::jsonb) AS attachment_routes
          FROM session_attachments a WHERE a.session_id = s.id
      ) ar`;

const OWNED_SESSION = sqlStatement(import.meta.url, {
  text: `${SESSION_SELECT}
     WHERE s.id = $1 AND s.key_id = $2`,
  row: z.object({
    id: z.string(),
    key_id: z.string(),
    wallet_id: z.string(),
    status: z.string(),
    model_id: z.string(),
    provider: z.string(),
    provider_model: z.string(),
    fallback_routes: ModelRoute.array(),
    capabilities: Capabilities,
    rate_snapshot_id: z.string(),
    source: z.string(),
    ...rateRowShape,
    created_at: z.date(),
    last_activity_at: z.date(),
    idle_timeout_seconds: z.number(),
    max_ends_at: z.date(),
    preauthorized_cents: z.number(),
    reserved_cents: z.number(),
    available_cents: z.number(),
    ...usageRowShape,
    billed_cents: z.number(),
    trace_id: z.string(),
    end_requested_at: z.date().nullable(),
    end_cause: z.string().nullable(),
    terminal_status: z.string().nullable(),
    settled_at: z.date().nullable(),
    legacy: z.boolean(),
    ends_with_socket: z.boolean(),
    initial_settings: RealtimeSessionSettings.nullable(),
    /** Each attachment's route split (null: unknown), in the order they started. */
    attachment_routes: CheckpointRoute.array().nullable().array(),
  }),
});
type SessionRow = z.infer<typeof OWNED_SESSION.row>;

function toRecord(r: SessionRow): SessionRecord {
  return {
    id: r.id,
    keyId: r.key_id,
    walletId: r.wallet_id,
    status: r.status as SessionStatus,
    modelId: r.model_id,
    provider: r.provider,
    providerModel: r.provider_model,
    fallbackRoutes: r.fallback_routes.map((f) => ({ provider: f.provider, providerModel: f.provider_model })),
    capabilities: r.capabilities,
    rateSnapshotId: r.rate_snapshot_id,
    pricingSource: r.source,
    rate: rateFromRow(r),
    createdAt: r.created_at,
    lastActivityAt: r.last_activity_at,
    idleTimeoutSeconds: r.idle_timeout_seconds,
    maxEndsAt: r.max_ends_at,
    preauthorizedCents: r.preauthorized_cents,
    reservedCents: r.reserved_cents,
    walletAvailableCents: r.available_cents,
    usage: usageFromRow(r),
    usageRoutes: usageByProvider(r.attachment_routes),
    billedCents: r.billed_cents,
    traceId: r.trace_id,
    endRequestedAt: r.end_requested_at,
    endCause: r.end_cause as EndCause | null,
    terminalStatus: r.terminal_status as TerminalStatus | null,
    settledAt: r.settled_at,
    legacy: r.legacy,
    endsWithSocket: r.ends_with_socket,
    initialSettings: r.initial_settings,
  };
}
