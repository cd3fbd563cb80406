import { z } from 'zod';
import { TerminalStatus } from './http.js';

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
 * Cumulative usage of one relay attachment; the newest `seq` wins, `final` closes the attachment. Version 2
 * carries every usage counter (decisions.md, "Usage and price by modality").
 */
export const UsageCheckpoint = z.strictObject({
  type: z.literal('usage.checkpoint'),
  version: z.literal(2),
  session_id: SessionId,
  attachment_id: z.string().min(1).max(128),
  relay_id: z.string().min(1).max(128),
  seq: z.int().positive(),
  audio_in_ms: NonNegInt,
  audio_out_ms: NonNegInt,
  input_audio_tokens: NonNegInt,
  input_text_tokens: NonNegInt,
  cached_input_tokens: NonNegInt,
  output_audio_tokens: NonNegInt,
  output_text_tokens: NonNegInt,
  transcribed_ms: NonNegInt,
  final: z.boolean(),
  emitted_at: NonNegInt,
});
export type UsageCheckpoint = z.infer<typeof UsageCheckpoint>;

const CHECKPOINT_COUNTERS = [
  'audio_in_ms',
  'audio_out_ms',
  'input_audio_tokens',
  'input_text_tokens',
  'cached_input_tokens',
  'output_audio_tokens',
  'output_text_tokens',
  'transcribed_ms',
  'emitted_at',
] as const;
const CHECKPOINT_KEYS = 16;

const isId = (v: unknown): v is string => typeof v === 'string' && v.length >= 1 && v.length <= 128;
const isCount = (v: unknown): v is number => Number.isSafeInteger(v) && (v as number) >= 0;

/**
 * `UsageCheckpoint.parse` without zod, for billing's hot path (tens of thousands a second): the parsed JSON
 * itself when it is a valid version 2 checkpoint, else undefined (then let the schema decide and explain).
 * It accepts only what the schema accepts, with the same result (property-tested in contract.test.ts).
 */
export function fastUsageCheckpoint(json: unknown): UsageCheckpoint | undefined {
  if (typeof json !== 'object' || json === null || Array.isArray(json)) return undefined;
  const o = json as Record<string, unknown>;
  if (o.type !== 'usage.checkpoint' || o.version !== 2) return undefined;
  if (!isId(o.session_id) || !isId(o.attachment_id) || !isId(o.relay_id)) return undefined;
  if (!isCount(o.seq) || o.seq === 0 || typeof o.final !== 'boolean') return undefined;
  for (const k of CHECKPOINT_COUNTERS) if (!isCount(o[k])) return undefined;
  // Every key above is an own property (JSON.parse makes no inherited ones): 16 keys means no unknown one.
  if (Object.keys(o).length !== CHECKPOINT_KEYS) return undefined;
  return o as UsageCheckpoint;
}

/**
 * Version 1, audio counters only, as relays before issue 9 publish it. Consumers still read it during a
 * rolling upgrade (billing first, then relays): it parses into version 2 with the other counters 0.
 */
export const UsageCheckpointV1 = UsageCheckpoint.omit({
  input_text_tokens: true,
  cached_input_tokens: true,
  output_text_tokens: true,
  transcribed_ms: true,
}).extend({ version: z.literal(1) });
export type UsageCheckpointV1 = z.infer<typeof UsageCheckpointV1>;

export const UsageCheckpointFromV1 = UsageCheckpointV1.transform((c): UsageCheckpoint => ({
  type: c.type,
  version: 2,
  session_id: c.session_id,
  attachment_id: c.attachment_id,
  relay_id: c.relay_id,
  seq: c.seq,
  audio_in_ms: c.audio_in_ms,
  audio_out_ms: c.audio_out_ms,
  input_audio_tokens: c.input_audio_tokens,
  input_text_tokens: 0,
  cached_input_tokens: 0,
  output_audio_tokens: c.output_audio_tokens,
  output_text_tokens: 0,
  transcribed_ms: 0,
  final: c.final,
  emitted_at: c.emitted_at,
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
export const LEGACY_BUS_MESSAGES = [{ type: 'usage.checkpoint', version: 1, schema: UsageCheckpointFromV1 }] as const;

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
