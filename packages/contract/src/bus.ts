import { z } from 'zod';
import { MAX_FALLBACK_ROUTES, ModelRoute, TerminalStatus, USAGE_COUNTER_NAMES, usageCounterShape } from './http.js';

/**
 * Bus messages. Every message carries `type` and `version`; a consumer acknowledges and logs a message of
 * a version it does not know instead of retrying it forever.
 */
const NonNegInt = z.int().nonnegative();
const SessionId = z.string().min(1).max(128);

/** Why a session ends; `terminalStatusFor` in @s2s/core maps each to the public terminal status. */
export const END_CAUSES = [
  'client_closed',
  'timeout',
  'error',
  'idle_timeout',
  'max_duration',
  'budget_exhausted',
  'upstream_failure',
] as const;
export const EndCause = z.enum(END_CAUSES);
export type EndCause = z.infer<typeof EndCause>;

/**
 * The part of an attachment's usage one route served (docs/providers.md, "Failover routes"): a provider and
 * its model name, never a URL or key, and the counters of the usage it served.
 */
export const CheckpointRoute = ModelRoute.extend(usageCounterShape);
export type CheckpointRoute = z.infer<typeof CheckpointRoute>;

/** A checkpoint names at most this many routes: the session's and each failover route once. */
export const MAX_CHECKPOINT_ROUTES = 1 + MAX_FALLBACK_ROUTES;

const UsageCheckpointShape = z.strictObject({
  type: z.literal('usage.checkpoint'),
  version: z.literal(3),
  session_id: SessionId,
  attachment_id: z.string().min(1).max(128),
  relay_id: z.string().min(1).max(128),
  seq: z.int().positive(),
  ...usageCounterShape,
  /**
   * The counters split by the route that served them, summing exactly to the totals above; null when the
   * split is unknown (versions 1 and 2, read as version 3).
   */
  routes: z.array(CheckpointRoute).max(MAX_CHECKPOINT_ROUTES).nullable(),
  final: z.boolean(),
  emitted_at: NonNegInt,
});

/** Every counter of the routes adds up to the checkpoint's own. */
function routesSumToTotals(c: Pick<UsageCheckpoint, 'routes' | (typeof USAGE_COUNTER_NAMES)[number]>): boolean {
  if (c.routes === null) return true;
  for (const k of USAGE_COUNTER_NAMES) {
    let sum = 0;
    for (const r of c.routes) sum += r[k];
    if (sum !== c[k]) return false;
  }
  return true;
}

/**
 * Cumulative usage of one relay attachment; the newest `seq` wins, `final` closes the attachment. Version 2
 * carries every usage counter (decisions.md, "Usage and price by modality"), version 3 also their split by
 * route.
 */
export const UsageCheckpoint = UsageCheckpointShape.refine(routesSumToTotals, {
  message: 'the routes do not add up to the totals',
  path: ['routes'],
});
export type UsageCheckpoint = z.infer<typeof UsageCheckpointShape>;

const CHECKPOINT_COUNTERS = [...USAGE_COUNTER_NAMES, 'emitted_at'] as const;
const CHECKPOINT_KEYS = 17;
const ROUTE_KEYS = 2 + USAGE_COUNTER_NAMES.length;

const isId = (v: unknown): v is string => typeof v === 'string' && v.length >= 1 && v.length <= 128;
const isCount = (v: unknown): v is number => Number.isSafeInteger(v) && (v as number) >= 0;
const isName = (v: unknown, max: number): v is string => typeof v === 'string' && v.length >= 1 && v.length <= max;

function isRoute(v: unknown): boolean {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return false;
  const r = v as Record<string, unknown>;
  if (!isName(r.provider, 64) || !isName(r.provider_model, 200)) return false;
  for (const k of USAGE_COUNTER_NAMES) if (!isCount(r[k])) return false;
  return Object.keys(r).length === ROUTE_KEYS;
}

/**
 * `UsageCheckpoint.parse` without zod, for billing's hot path (tens of thousands a second): the parsed JSON
 * itself when it is a valid version 3 checkpoint, else undefined (then let the schema decide and explain).
 * It accepts only what the schema accepts, with the same result (property-tested in contract.test.ts).
 */
export function fastUsageCheckpoint(json: unknown): UsageCheckpoint | undefined {
  if (typeof json !== 'object' || json === null || Array.isArray(json)) return undefined;
  const o = json as Record<string, unknown>;
  if (o.type !== 'usage.checkpoint' || o.version !== 3) return undefined;
  if (!isId(o.session_id) || !isId(o.attachment_id) || !isId(o.relay_id)) return undefined;
  if (!isCount(o.seq) || o.seq === 0 || typeof o.final !== 'boolean') return undefined;
  for (const k of CHECKPOINT_COUNTERS) if (!isCount(o[k])) return undefined;
  const routes = o.routes;
  if (routes !== null) {
    if (!Array.isArray(routes) || routes.length > MAX_CHECKPOINT_ROUTES || !routes.every(isRoute)) return undefined;
  }
  // Every key above is an own property (JSON.parse makes no inherited ones): 17 keys means no unknown one.
  if (Object.keys(o).length !== CHECKPOINT_KEYS) return undefined;
  const checkpoint = o as UsageCheckpoint;
  return routesSumToTotals(checkpoint) ? checkpoint : undefined;
}

/**
 * Version 2, every counter but no split by route, as relays before the failover routes publish it.
 * Consumers still read it during a rolling upgrade (billing first, then relays): it parses into version 3
 * with `routes: null` (the split unknown).
 */
export const UsageCheckpointV2 = UsageCheckpointShape.omit({ routes: true }).extend({ version: z.literal(2) });
export type UsageCheckpointV2 = z.infer<typeof UsageCheckpointV2>;

export const UsageCheckpointFromV2 = UsageCheckpointV2.transform((c): UsageCheckpoint => ({ ...c, version: 3, routes: null }));

/**
 * Version 1, audio counters only, as relays before issue 9 publish it: it parses into version 3 with the
 * other counters 0 and the split unknown.
 */
export const UsageCheckpointV1 = UsageCheckpointV2.omit({
  input_text_tokens: true,
  cached_input_tokens: true,
  output_text_tokens: true,
  transcribed_ms: true,
}).extend({ version: z.literal(1) });
export type UsageCheckpointV1 = z.infer<typeof UsageCheckpointV1>;

export const UsageCheckpointFromV1 = UsageCheckpointV1.transform((c): UsageCheckpoint => ({
  ...c,
  version: 3,
  input_text_tokens: 0,
  cached_input_tokens: 0,
  output_text_tokens: 0,
  transcribed_ms: 0,
  routes: null,
}));

export const SessionEndRequested = z.strictObject({
  type: z.literal('session.end_requested'),
  version: z.literal(1),
  session_id: SessionId,
  cause: EndCause,
  terminal_status: TerminalStatus,
  requested_at: NonNegInt,
});
export type SessionEndRequested = z.infer<typeof SessionEndRequested>;

export const SessionSettled = z.strictObject({
  type: z.literal('session.settled'),
  version: z.literal(1),
  session_id: SessionId,
  status: TerminalStatus,
  billed_cents: NonNegInt,
  settled_at: NonNegInt,
});
export type SessionSettled = z.infer<typeof SessionSettled>;

export const BusMessage = z.discriminatedUnion('type', [UsageCheckpoint, SessionEndRequested, SessionSettled]);
export type BusMessage = z.infer<typeof BusMessage>;

/** Older message versions consumers still read, each parsing into its current version. */
export const LEGACY_BUS_MESSAGES = [
  { type: 'usage.checkpoint', version: 1, schema: UsageCheckpointFromV1 },
  { type: 'usage.checkpoint', version: 2, schema: UsageCheckpointFromV2 },
] as const;

/**
 * Core NATS only (not in the stream): a relay announces each new attachment so that any relay holding an
 * older attachment of the same session closes it (4001). Newest = latest (started_at, attachment_id).
 */
export const RelayAttached = z.strictObject({
  type: z.literal('relay.attached'),
  version: z.literal(1),
  session_id: SessionId,
  attachment_id: z.string().min(1).max(128),
  relay_id: z.string().min(1).max(128),
  /** The attachment row's started_at, Unix milliseconds (the database clock). */
  started_at: NonNegInt,
});
export type RelayAttached = z.infer<typeof RelayAttached>;

/**
 * Core NATS only (not in the stream): a control plane changed the catalog (a model upserted, approved,
 * disabled or repriced), so every control plane reloads the public catalog it serves from memory.
 */
export const CatalogChanged = z.strictObject({
  type: z.literal('catalog.changed'),
  version: z.literal(1),
  model_id: z.string().min(1).max(256),
  /** Unix milliseconds when the change committed (the publisher's clock). */
  changed_at: NonNegInt,
});
export type CatalogChanged = z.infer<typeof CatalogChanged>;

/** Just enough to tell a message's kind and version before parsing it whole. */
export const BusEnvelope = z.looseObject({ type: z.string(), version: z.int() });
export type BusEnvelope = z.infer<typeof BusEnvelope>;

/** Subject names under a deployment's prefix (tests use a unique prefix each). */
export function busSubjects(prefix: string) {
  return {
    stream: `${prefix.toUpperCase().replace(/[^A-Z0-9_]/g, '_')}_EVENTS`,
    all: [`${prefix}.usage.>`, `${prefix}.session.>`, `${prefix}.dlq.>`],
    usageCheckpoint: (sessionId: string) => `${prefix}.usage.checkpoint.${sessionId}`,
    usageCheckpointAll: `${prefix}.usage.checkpoint.*`,
    endRequested: (sessionId: string) => `${prefix}.session.end_requested.${sessionId}`,
    endRequestedAll: `${prefix}.session.end_requested.*`,
    settled: (sessionId: string) => `${prefix}.session.settled.${sessionId}`,
    settledAll: `${prefix}.session.settled.*`,
    deadLetter: `${prefix}.dlq.billing`,
    // Core NATS, outside the stream: attachment announcements between relays.
    relayAttached: (sessionId: string) => `${prefix}.relay.attached.${sessionId}`,
    relayAttachedAll: `${prefix}.relay.attached.*`,
    // Core NATS, outside the stream: catalog changes between control planes.
    catalogChanged: `${prefix}.catalog.changed`,
  };
}
export type BusSubjects = ReturnType<typeof busSubjects>;
