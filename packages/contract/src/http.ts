import { z } from 'zod';
import { AudioFormats } from './audio.js';

const Int = z.int();
const NonNegInt = z.int().nonnegative();

/** Every usage counter, in the order the contract lists them (decisions.md, "Usage and price by modality"). */
export const USAGE_COUNTER_NAMES = [
  'audio_in_ms',
  'audio_out_ms',
  'input_audio_tokens',
  'input_text_tokens',
  'cached_input_tokens',
  'output_audio_tokens',
  'output_text_tokens',
  'transcribed_ms',
] as const;

/** The usage counters as object fields, each a non-negative integer. */
export const usageCounterShape = Object.fromEntries(USAGE_COUNTER_NAMES.map((k) => [k, NonNegInt])) as Record<
  (typeof USAGE_COUNTER_NAMES)[number],
  typeof NonNegInt
>;

/**
 * The part of a session's usage one provider served (docs/providers.md, "Failover routes"): a session that
 * failed over names each provider once, in the order they served it. The parts add up to the totals exactly.
 */
export const ProviderUsage = z.strictObject({ provider: z.string(), ...usageCounterShape });
export type ProviderUsage = z.infer<typeof ProviderUsage>;

export const SESSION_STATUSES = ['ready', 'active', 'completed', 'cancelled', 'failed', 'expired'] as const;
export const SessionStatus = z.enum(SESSION_STATUSES);
export type SessionStatus = z.infer<typeof SessionStatus>;

export const TERMINAL_STATUSES = ['completed', 'cancelled', 'failed', 'expired'] as const;
export const TerminalStatus = z.enum(TERMINAL_STATUSES);
export type TerminalStatus = z.infer<typeof TerminalStatus>;

export const REALTIME_PROTOCOL = 'svc-realtime-v1';
export const SESSION_MODE = 'speech_to_speech';

/** `<namespace>/<model_name>` (api-v1 §2.2). */
export const ModelId = z
  .string()
  .max(200)
  .regex(/^[a-z0-9][a-z0-9._-]*\/[A-Za-z0-9][A-Za-z0-9._:-]*$/, 'must look like <namespace>/<model_name>');
export type ModelId = z.infer<typeof ModelId>;

/**
 * What the model's provider does with the current OpenAI session fields (decisions.md, "Current OpenAI
 * session fields"): `reasoning` and `prompt` are passed on (true) or refused naming the param (false); a hint
 * is `honoured` (passed on) or the value that takes effect there whatever the client asks.
 */
export const SessionFieldCapabilities = z.strictObject({
  reasoning: z.boolean(),
  prompt: z.boolean(),
  parallel_tool_calls: z.union([z.literal('honoured'), z.boolean()]),
  truncation: z.enum(['honoured', 'auto', 'disabled']),
  include: z.enum(['honoured', 'none']),
});
export type SessionFieldCapabilities = z.infer<typeof SessionFieldCapabilities>;

/**
 * What each provider adapter of the relay does with the current OpenAI session fields, as the relay's
 * adapters declare it (services/relay/src/providers: `supports.sessionFields`): the catalog shows it in each
 * model's capabilities and a session's creation refuses by it. tests/e2e/openai-session-fields.test.ts checks
 * the two agree.
 */
export const PROVIDER_SESSION_FIELDS: Readonly<Record<string, SessionFieldCapabilities>> = Object.freeze({
  local: { reasoning: false, prompt: false, parallel_tool_calls: false, truncation: 'disabled', include: 'none' },
  openai: { reasoning: true, prompt: true, parallel_tool_calls: 'honoured', truncation: 'honoured', include: 'honoured' },
  azure: { reasoning: true, prompt: true, parallel_tool_calls: 'honoured', truncation: 'honoured', include: 'honoured' },
  gemini: { reasoning: false, prompt: false, parallel_tool_calls: true, truncation: 'disabled', include: 'none' },
});
/** A provider this deployment does not know: audio and nothing else. */
const NO_SESSION_FIELDS: SessionFieldCapabilities = Object.freeze({
  reasoning: false,
  prompt: false,
  parallel_tool_calls: false,
  truncation: 'disabled',
  include: 'none',
});

/** What `provider` does with the current OpenAI session fields (a copy). */
export function sessionFieldsOf(provider: string): SessionFieldCapabilities {
  return { ...(PROVIDER_SESSION_FIELDS[provider] ?? NO_SESSION_FIELDS) };
}

export const Capabilities = z.strictObject({
  speech_to_speech: z.boolean(),
  server_vad: z.boolean(),
  barge_in: z.boolean(),
  input_transcription: z.string(),
  output_transcription: z.string(),
  /** In the catalog: what the model's provider honours (set from the provider, not by the operator). */
  session_fields: SessionFieldCapabilities.optional(),
});
export type Capabilities = z.infer<typeof Capabilities>;

export const Modalities = z.strictObject({
  input: z.array(z.string().min(1)).min(1),
  output: z.array(z.string().min(1)).min(1),
});
export type Modalities = z.infer<typeof Modalities>;

/** Operator-set selling rate, in milli-cents (decisions.md, "Usage and price by modality"). */
export const Rate = z.strictObject({
  per_minute: NonNegInt,
  audio_in_token: NonNegInt,
  audio_out_token: NonNegInt,
  text_in_token: NonNegInt,
  text_out_token: NonNegInt,
  cached_in_token: NonNegInt,
  transcription_per_minute: NonNegInt,
  relay_fee_milli_cents: NonNegInt,
});
export type Rate = z.infer<typeof Rate>;

/** A rate as PUT /admin/v1/models takes it: the text, cached and transcription rates are optional, default 0. */
export const RateInput = Rate.extend({
  text_in_token: NonNegInt.default(0),
  text_out_token: NonNegInt.default(0),
  cached_in_token: NonNegInt.default(0),
  transcription_per_minute: NonNegInt.default(0),
});
export type RateInput = z.input<typeof RateInput>;

export const Pricing = Rate.extend({
  source: z.string(),
  currency: z.literal('cent'),
  unit: z.literal('milli_cents'),
  rate_snapshot_id: z.string(),
});
export type Pricing = z.infer<typeof Pricing>;

/** Catalog entry (api-v1 §2.2) with the legacy aliases kept during migration. */
export const Model = z.strictObject({
  id: ModelId,
  object: z.literal('model'),
  display_name: z.string(),
  owned_by: z.string(),
  modalities: Modalities,
  capabilities: Capabilities,
  audio: AudioFormats,
  pricing: Pricing,
  // Legacy aliases.
  name: z.string(),
  created: Int,
  pricing_unit: z.literal('milli_cents'),
  price_per_minute_milli_cents: NonNegInt,
  price_audio_in_token_milli_cents: NonNegInt,
  price_audio_out_token_milli_cents: NonNegInt,
  price_relay_fee_milli_cents: NonNegInt,
});
export type Model = z.infer<typeof Model>;

export const ModelList = z.strictObject({ object: z.literal('list'), data: z.array(Model) });
export type ModelList = z.infer<typeof ModelList>;

export const VoiceSession = z.strictObject({
  id: z.string().min(1),
  object: z.literal('voice.session'),
  status: SessionStatus,
  model: ModelId,
  mode: z.literal(SESSION_MODE),
  realtime: z.strictObject({ url: z.string(), protocol: z.literal(REALTIME_PROTOCOL) }),
  audio: AudioFormats,
  capabilities: Capabilities,
  created_at: Int,
  expires_at: Int,
  billing: z.strictObject({
    preauthorized_cents: NonNegInt,
    balance_cents: Int,
    reserved_cents: NonNegInt,
  }),
  usage: z.strictObject({
    model: ModelId,
    provider: z.string(),
    pricing_source: z.string(),
    rate_snapshot_id: z.string(),
    audio_in_ms: NonNegInt,
    audio_out_ms: NonNegInt,
    billed_cents: NonNegInt,
    // Beside the fields api-v1.md lists (decisions.md, "Usage and price by modality").
    input_audio_tokens: NonNegInt,
    input_text_tokens: NonNegInt,
    cached_input_tokens: NonNegInt,
    output_audio_tokens: NonNegInt,
    output_text_tokens: NonNegInt,
    transcribed_ms: NonNegInt,
    /** The usage split by the provider that served it; absent when a part's route is unknown (older relays). */
    routes: z.array(ProviderUsage).optional(),
  }),
  trace_id: z.string(),
});
export type VoiceSession = z.infer<typeof VoiceSession>;

export const CreateSessionRequest = z.strictObject({
  model: z.string().min(1),
  mode: z.literal(SESSION_MODE),
});
export type CreateSessionRequest = z.infer<typeof CreateSessionRequest>;

export const END_REASONS = ['client_closed', 'timeout', 'error'] as const;
export const EndReason = z.enum(END_REASONS);
export type EndReason = z.infer<typeof EndReason>;

/** Optional body; usage, elapsed time or token counts are unsupported fields and rejected. */
export const EndSessionRequest = z.strictObject({ reason: EndReason.optional() });
export type EndSessionRequest = z.infer<typeof EndSessionRequest>;

/** Idempotency-Key: printable ASCII, 1–255 characters (decisions.md). */
export const IdempotencyKey = z.string().regex(/^[\x20-\x7e]{1,255}$/, 'must be 1-255 printable ASCII characters');

// ---- Operator API (decisions.md, Keys and operators) ----

/** Per-key limits (decisions.md, "Limits"): int4 columns, at least 1. */
export const KeyLimit = z.int().min(1).max(2_147_483_647);

export const CreateKeyRequest = z.strictObject({
  balance_cents: NonNegInt,
  label: z.string().min(1).max(200).optional(),
  /** Absent: the gateway's default (KEY_MAX_LIVE_SESSIONS). */
  max_live_sessions: KeyLimit.optional(),
  /** Absent: the gateway's default (KEY_MAX_CREATES_PER_MINUTE). */
  max_creates_per_minute: KeyLimit.optional(),
});
export type CreateKeyRequest = z.infer<typeof CreateKeyRequest>;

/** The limits in effect for a key: its own, or the gateway's defaults. */
export const KeyLimits = z.strictObject({
  max_live_sessions: KeyLimit,
  max_creates_per_minute: KeyLimit,
});
export type KeyLimits = z.infer<typeof KeyLimits>;

export const CreateKeyResponse = z.strictObject({
  id: z.string(),
  key: z.string(),
  wallet_id: z.string(),
  balance_cents: NonNegInt,
  ...KeyLimits.shape,
});
export type CreateKeyResponse = z.infer<typeof CreateKeyResponse>;

/** PATCH /admin/v1/keys/{key_id}: null returns a limit to the gateway's default. */
export const UpdateKeyRequest = z
  .strictObject({
    max_live_sessions: KeyLimit.nullable().optional(),
    max_creates_per_minute: KeyLimit.nullable().optional(),
    label: z.string().min(1).max(200).nullable().optional(),
  })
  .refine((b) => Object.keys(b).length > 0, { message: 'name at least one field to change' });
export type UpdateKeyRequest = z.infer<typeof UpdateKeyRequest>;

/** GET and PATCH /admin/v1/keys/{key_id}: a key as the operator sees it (never its secret). */
export const ApiKeyResource = z.strictObject({
  id: z.string(),
  wallet_id: z.string(),
  label: z.string().nullable(),
  /** The key's first characters (`vr_sk_` and 4 more), enough to recognise it; never the secret. */
  prefix: z.string(),
  revoked: z.boolean(),
  created_at: Int,
  ...KeyLimits.shape,
  /** Sessions of this key that are not terminal yet. */
  live_sessions: NonNegInt,
});
export type ApiKeyResource = z.infer<typeof ApiKeyResource>;

export const RevokeKeyResponse = z.strictObject({ id: z.string(), revoked: z.literal(true) });
export type RevokeKeyResponse = z.infer<typeof RevokeKeyResponse>;

export const CreditWalletRequest = z.strictObject({ amount_cents: z.int().positive() });
export type CreditWalletRequest = z.infer<typeof CreditWalletRequest>;

export const Wallet = z.strictObject({
  id: z.string(),
  balance_cents: NonNegInt,
  reserved_cents: NonNegInt,
  available_cents: NonNegInt,
});
export type Wallet = z.infer<typeof Wallet>;

/** One deployment of a model at a provider: a failover route (docs/providers.md, "Failover routes"). */
export const ModelRoute = z.strictObject({
  provider: z.string().min(1).max(64),
  provider_model: z.string().min(1).max(200),
});
export type ModelRoute = z.infer<typeof ModelRoute>;

/** At most this many failover routes per model. */
export const MAX_FALLBACK_ROUTES = 4;

export const UpsertModelRequest = z
  .strictObject({
    id: ModelId,
    display_name: z.string().min(1).max(200),
    owned_by: z.string().min(1).max(200),
    provider: z.string().min(1).max(64),
    provider_model: z.string().min(1).max(200),
    enabled: z.boolean(),
    approved: z.boolean(),
    pricing: RateInput,
    capabilities: Capabilities.optional(),
    audio: AudioFormats.optional(),
    modalities: Modalities.optional(),
    /** Further routes, in order, taken when the session's upstream cannot be re-established on its route. */
    fallback_routes: z
      .array(ModelRoute)
      .max(MAX_FALLBACK_ROUTES)
      .optional()
      .refine(
        (routes) => routes === undefined || new Set(routes.map((r) => `${r.provider}\u0000${r.provider_model}`)).size === routes.length,
        'fallback_routes must be distinct',
      ),
  })
  .refine((m) => !m.fallback_routes?.some((r) => r.provider === m.provider && r.provider_model === m.provider_model), {
    message: 'a fallback route must differ from the primary route (provider, provider_model)',
    path: ['fallback_routes'],
  });
export type UpsertModelRequest = z.infer<typeof UpsertModelRequest>;

/** What the operator API answers for a model: the public entry plus its internal routing. */
export const AdminModel = Model.extend({
  provider: z.string(),
  provider_model: z.string(),
  fallback_routes: z.array(ModelRoute),
  enabled: z.boolean(),
  approved: z.boolean(),
});
export type AdminModel = z.infer<typeof AdminModel>;
