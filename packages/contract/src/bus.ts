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
  // The relay holding a call that cannot reattach (a phone stream, WebRTC) is gone: its lease expired.
  'relay_lost',
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

const Provider = ModelRoute.shape.provider;
const ProviderModel = ModelRoute.shape.provider_model;

/**
 * One route's part in a version 4 checkpoint, as an array: `[provider, provider_model, ...counters]` with the
 * counters in `USAGE_COUNTER_NAMES` order, or `[provider, provider_model]` alone when that route is the only
 * one and served everything so far (its counters are then the checkpoint's totals). A single-route
 * attachment, nearly every one, so sends its route in about 30 bytes instead of the 240 of a version 3 object.
 */
export const CompactRoute = z.union([
  z.tuple([Provider, ProviderModel]),
  z.tuple([Provider, ProviderModel, NonNegInt, NonNegInt, NonNegInt, NonNegInt, NonNegInt, NonNegInt, NonNegInt, NonNegInt]),
]);
export type CompactRoute = z.infer<typeof CompactRoute>;

/** Where a full CompactRoute keeps counter `k`. */
const COUNTER_AT = 2;

const checkpointIds = {
  session_id: SessionId,
  attachment_id: z.string().min(1).max(128),
  relay_id: z.string().min(1).max(128),
  seq: z.int().positive(),
  ...usageCounterShape,
};

const UsageCheckpointShape = z.strictObject({
  type: z.literal('usage.checkpoint'),
  version: z.literal(4),
  ...checkpointIds,
  /**
   * The counters split by the route that served them (CompactRoute), summing exactly to the totals above; null
   * when the split is unknown (versions 1 and 2, read as version 4).
   */
  routes: z.array(CompactRoute).max(MAX_CHECKPOINT_ROUTES).nullable(),
  final: z.boolean(),
  emitted_at: NonNegInt,
});
export type UsageCheckpoint = z.infer<typeof UsageCheckpointShape>;
type Totals = Pick<UsageCheckpoint, (typeof USAGE_COUNTER_NAMES)[number]>;
const ZERO_COUNTERS = Object.fromEntries(USAGE_COUNTER_NAMES.map((k) => [k, 0])) as Totals;

/** Every counter of the routes adds up to the checkpoint's own; a route without counters only alone. */
function compactRoutesSumToTotals(c: Totals & { routes: readonly (readonly unknown[])[] | null }): boolean {
  const routes = c.routes;
  if (routes === null) return true;
  if (routes.length === 1 && routes[0]?.length === COUNTER_AT) return true;
  for (let i = 0; i < USAGE_COUNTER_NAMES.length; i++) {
    let sum = 0;
    for (const r of routes) {
      if (r.length === COUNTER_AT) return false;
      sum += r[COUNTER_AT + i] as number;
    }
    if (sum !== c[USAGE_COUNTER_NAMES[i] as keyof Totals]) return false;
  }
  return true;
}

/**
 * Cumulative usage of one relay attachment; the newest `seq` wins, `final` closes the attachment. Version 2
 * carries every usage counter (decisions.md, "Usage and price by modality"), version 3 also their split by
 * route, version 4 the same split as arrays, the route of a single-route attachment without its counters.
 */
export const UsageCheckpoint = UsageCheckpointShape.refine(compactRoutesSumToTotals, {
  message: 'the routes do not add up to the totals',
  path: ['routes'],
});

/** A route's part as a CompactRoute with its counters (exact, whatever the other routes). */
function fullCompactRoute(r: CheckpointRoute): CompactRoute {
  return [
    r.provider,
    r.provider_model,
    r.audio_in_ms,
    r.audio_out_ms,
    r.input_audio_tokens,
    r.input_text_tokens,
    r.cached_input_tokens,
    r.output_audio_tokens,
    r.output_text_tokens,
    r.transcribed_ms,
  ];
}

/**
 * The relay's split by route (parts summing to the totals), as version 4 carries it: a single route without
 * its counters, several each with theirs.
 */
export function compactRoutes(routes: readonly CheckpointRoute[]): CompactRoute[] {
  const only = routes.length === 1 ? routes[0] : undefined;
  return only ? [[only.provider, only.provider_model]] : routes.map(fullCompactRoute);
}

/** A checkpoint's split by route as objects (what billing stores), or null when it is unknown. */
export function checkpointRoutes(c: UsageCheckpoint): CheckpointRoute[] | null {
  const routes = c.routes;
  if (routes === null) return null;
  return routes.map((r) => {
    const route: CheckpointRoute = { provider: r[0], provider_model: r[1], ...ZERO_COUNTERS };
    for (let i = 0; i < USAGE_COUNTER_NAMES.length; i++) {
      const k = USAGE_COUNTER_NAMES[i] as keyof Totals;
      route[k] = r.length === COUNTER_AT ? c[k] : (r[COUNTER_AT + i] as number);
    }
    return route;
  });
}

/** Version 3: the split by route as objects, every route with its counters (relays before version 4). */
const UsageCheckpointV3Shape = z.strictObject({
  type: z.literal('usage.checkpoint'),
  version: z.literal(3),
  ...checkpointIds,
  routes: z.array(CheckpointRoute).max(MAX_CHECKPOINT_ROUTES).nullable(),
  final: z.boolean(),
  emitted_at: NonNegInt,
});
export type UsageCheckpointV3 = z.infer<typeof UsageCheckpointV3Shape>;

/** Every counter of the routes adds up to the checkpoint's own. */
function routesSumToTotals(c: Pick<UsageCheckpointV3, 'routes' | (typeof USAGE_COUNTER_NAMES)[number]>): boolean {
  if (c.routes === null) return true;
  for (const k of USAGE_COUNTER_NAMES) {
    let sum = 0;
    for (const r of c.routes) sum += r[k];
    if (sum !== c[k]) return false;
  }
  return true;
}

export const UsageCheckpointV3 = UsageCheckpointV3Shape.refine(routesSumToTotals, {
  message: 'the routes do not add up to the totals',
  path: ['routes'],
});

/** A version 3 checkpoint as version 4: every route with its counters, as it came. */
export function checkpointFromV3(c: UsageCheckpointV3): UsageCheckpoint {
  return { ...c, version: 4, routes: c.routes === null ? null : c.routes.map(fullCompactRoute) };
}

/**
 * Version 3 is still read during a rolling upgrade (billing first, then relays): it parses into version 4,
 * each route an array with its counters.
 */
export const UsageCheckpointFromV3 = UsageCheckpointV3.transform(checkpointFromV3);

const CHECKPOINT_COUNTERS = [...USAGE_COUNTER_NAMES, 'emitted_at'] as const;
const CHECKPOINT_KEYS = 17;
const ROUTE_KEYS = 2 + USAGE_COUNTER_NAMES.length;

const isId = (v: unknown): v is string => typeof v === 'string' && v.length >= 1 && v.length <= 128;
const isCount = (v: unknown): v is number => Number.isSafeInteger(v) && (v as number) >= 0;
const isName = (v: unknown, max: number): v is string => typeof v === 'string' && v.length >= 1 && v.length <= max;

/** A version 3 route object. */
function isRoute(v: unknown): boolean {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return false;
  const r = v as Record<string, unknown>;
  if (!isName(r.provider, 64) || !isName(r.provider_model, 200)) return false;
  for (const k of USAGE_COUNTER_NAMES) if (!isCount(r[k])) return false;
  return Object.keys(r).length === ROUTE_KEYS;
}

/** A version 4 route array (CompactRoute). */
function isCompactRoute(v: unknown): boolean {
  if (!Array.isArray(v) || (v.length !== COUNTER_AT && v.length !== ROUTE_KEYS)) return false;
  if (!isName(v[0], 64) || !isName(v[1], 200)) return false;
  for (let i = COUNTER_AT; i < v.length; i++) if (!isCount(v[i])) return false;
  return true;
}

/**
 * `UsageCheckpoint.parse` without zod, for billing's hot path (tens of thousands a second): the parsed JSON
 * itself when it is a valid version 4 checkpoint, or a valid version 3 one turned into version 4 in place
 * (what `UsageCheckpointFromV3` gives), else undefined (then let the schemas decide and explain). It accepts
 * only what the schemas accept, with the same result (property-tested in contract.test.ts).
 */
export function fastUsageCheckpoint(json: unknown): UsageCheckpoint | undefined {
  if (typeof json !== 'object' || json === null || Array.isArray(json)) return undefined;
  const o = json as Record<string, unknown>;
  const v3 = o.version === 3;
  if (o.type !== 'usage.checkpoint' || (o.version !== 4 && !v3)) return undefined;
  if (!isId(o.session_id) || !isId(o.attachment_id) || !isId(o.relay_id)) return undefined;
  if (!isCount(o.seq) || o.seq === 0 || typeof o.final !== 'boolean') return undefined;
  for (const k of CHECKPOINT_COUNTERS) if (!isCount(o[k])) return undefined;
  const routes = o.routes;
  if (routes !== null) {
    if (!Array.isArray(routes) || routes.length > MAX_CHECKPOINT_ROUTES || !routes.every(v3 ? isRoute : isCompactRoute)) return undefined;
  }
  // Every key above is an own property (JSON.parse makes no inherited ones): 17 keys means no unknown one.
  if (Object.keys(o).length !== CHECKPOINT_KEYS) return undefined;
  if (v3) {
    const checkpoint = o as UsageCheckpointV3;
    if (!routesSumToTotals(checkpoint)) return undefined;
    o.version = 4;
    if (checkpoint.routes !== null) o.routes = checkpoint.routes.map(fullCompactRoute);
    return o as UsageCheckpoint;
  }
  const checkpoint = o as UsageCheckpoint;
  return compactRoutesSumToTotals(checkpoint) ? checkpoint : undefined;
}

/**
 * Version 2, every counter but no split by route, as relays before the failover routes publish it.
 * Consumers still read it during a rolling upgrade (billing first, then relays): it parses into version 4
 * with `routes: null` (the split unknown).
 */
export const UsageCheckpointV2 = UsageCheckpointShape.omit({ routes: true }).extend({ version: z.literal(2) });
export type UsageCheckpointV2 = z.infer<typeof UsageCheckpointV2>;

export const UsageCheckpointFromV2 = UsageCheckpointV2.transform((c): UsageCheckpoint => ({ ...c, version: 4, routes: null }));

/**
 * Version 1, audio counters only, as relays before issue 9 publish it: it parses into version 4 with the
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
  version: 4,
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
  { type: 'usage.checkpoint', version: 3, schema: UsageCheckpointFromV3 },
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

/**
 * Core NATS only: a control socket (decisions.md, "Control sockets") of a session opened (`control.opened`) or
 * closed (`control.closed`) on some relay. The relay that holds the session's media attachment bridges the
 * newest open one; a control socket that sees a newer one close with 4001. A media attachment that starts
 * announces itself (`control.media_attached`) so that an already open control socket announces itself again.
 * The events themselves travel as their OpenAI-dialect JSON text on the `controlIn` / `controlOut` subjects.
 */
export const ControlOpened = z.strictObject({
  type: z.literal('control.opened'),
  version: z.literal(1),
  session_id: SessionId,
  control_id: z.string().min(1).max(128),
  /** Unix milliseconds when it opened (the relay's clock). */
  started_at: NonNegInt,
});
export type ControlOpened = z.infer<typeof ControlOpened>;
export const ControlClosed = z.strictObject({
  type: z.literal('control.closed'),
  version: z.literal(1),
  session_id: SessionId,
  control_id: z.string().min(1).max(128),
});
export type ControlClosed = z.infer<typeof ControlClosed>;
export const ControlMediaAttached = z.strictObject({
  type: z.literal('control.media_attached'),
  version: z.literal(1),
  session_id: SessionId,
  attachment_id: z.string().min(1).max(128),
});
export type ControlMediaAttached = z.infer<typeof ControlMediaAttached>;
export const ControlSignal = z.discriminatedUnion('type', [ControlOpened, ControlClosed, ControlMediaAttached]);
export type ControlSignal = z.infer<typeof ControlSignal>;

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
    // Core NATS, outside the stream: control sockets and the media attachment they steer (ControlSignal on
    // `control`, event text on `controlIn` (to the attachment) and `controlOut` (to the control socket)).
    control: (sessionId: string) => `${prefix}.control.${sessionId}.signal`,
    controlIn: (sessionId: string) => `${prefix}.control.${sessionId}.in`,
    controlOut: (sessionId: string) => `${prefix}.control.${sessionId}.out`,
    // Core NATS, outside the stream: catalog changes between control planes.
    catalogChanged: `${prefix}.catalog.changed`,
  };
}
export type BusSubjects = ReturnType<typeof busSubjects>;
