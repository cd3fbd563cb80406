import { z } from 'zod';
import { ModelId } from './http.js';

/**
 * Ephemeral client secrets (decisions.md, "Ephemeral client secrets (browsers)"): `ek_` and at least 32
 * base62 characters. They attach one session until they expire; no HTTP route accepts them.
 */
export const CLIENT_SECRET_PREFIX = 'ek_';
export const CLIENT_SECRET_PATTERN = /^ek_[0-9A-Za-z]{32,128}$/;
/** Lifetime of a secret when the request names none, and the longest one may ask for. */
export const CLIENT_SECRET_DEFAULT_SECONDS = 60;
export const CLIENT_SECRET_MAX_SECONDS = 600;
export const CLIENT_SECRET_MIN_SECONDS = 10;

/** Subprotocols that carry a credential: OpenAI's browser convention and this gateway's own. */
export const OPENAI_KEY_SUBPROTOCOL_PREFIX = 'openai-insecure-api-key.';
export const SVC_AUTH_SUBPROTOCOL_PREFIX = 'svc-realtime-v1.auth.';
/** The subprotocol an OpenAI Realtime client offers (the server echoes it only when offered). */
export const OPENAI_REALTIME_SUBPROTOCOL = 'realtime';

/** `expires_after` of OpenAI's client secret request; only `created_at` is an anchor. */
export const ExpiresAfter = z.strictObject({
  anchor: z.literal('created_at'),
  seconds: z.int().min(CLIENT_SECRET_MIN_SECONDS).max(CLIENT_SECRET_MAX_SECONDS),
});
export type ExpiresAfter = z.infer<typeof ExpiresAfter>;

/**
 * The formats in OpenAI's GA spelling: PCM16 at 24 kHz, and G.711 μ-law and A-law at 8 kHz (decisions.md,
 * "Phone audio"); any other is refused, naming the param.
 */
export const GaAudioFormat = z.discriminatedUnion('type', [
  z.strictObject({ type: z.literal('audio/pcm'), rate: z.literal(24000).optional() }),
  z.strictObject({ type: z.literal('audio/pcmu') }),
  z.strictObject({ type: z.literal('audio/pcma') }),
]);
export type GaAudioFormat = z.infer<typeof GaAudioFormat>;

const ServerVad = z.strictObject({
  type: z.literal('server_vad'),
  threshold: z.number().min(0).max(1).optional(),
  prefix_padding_ms: z.int().min(0).max(10_000).optional(),
  silence_duration_ms: z.int().min(100).max(10_000).optional(),
  create_response: z.boolean().optional(),
  interrupt_response: z.boolean().optional(),
  idle_timeout_ms: z.int().nullable().optional(),
});
const SemanticVad = z.strictObject({
  type: z.literal('semantic_vad'),
  eagerness: z.enum(['low', 'medium', 'high', 'auto']).optional(),
  create_response: z.boolean().optional(),
  interrupt_response: z.boolean().optional(),
});

const FunctionTool = z.strictObject({
  type: z.literal('function'),
  name: z.string().min(1).max(64),
  description: z.string().max(16_384).optional(),
  parameters: z.record(z.string(), z.unknown()).optional(),
});

const ToolChoice = z.union([
  z.enum(['auto', 'none', 'required']),
  z.strictObject({ type: z.literal('function'), name: z.string().min(1) }),
]);

/** The current session fields of OpenAI's types (decisions.md, "Current OpenAI session fields"). */
export const REASONING_EFFORTS = ['minimal', 'low', 'medium', 'high', 'xhigh'] as const;
export const Reasoning = z.strictObject({ effort: z.enum(REASONING_EFFORTS).optional() });
export const Truncation = z.union([
  z.enum(['auto', 'disabled']),
  z.strictObject({
    type: z.literal('retention_ratio'),
    retention_ratio: z.number().min(0).max(1),
    token_limits: z.strictObject({ post_instructions: z.int().min(0).optional() }).optional(),
  }),
]);
/** A stored prompt of the provider by reference; its variables as text (image and file inputs are not offered). */
export const PromptReference = z.strictObject({
  id: z.string().min(1).max(200),
  version: z.string().max(64).nullable().optional(),
  variables: z
    .record(z.string(), z.string().max(64 * 1024))
    .nullable()
    .optional(),
});
export const IncludeField = z.literal('item.input_audio_transcription.logprobs');

/**
 * The settings of OpenAI's GA realtime session that a client secret keeps for the first attach (decisions.md,
 * "The OpenAI-compatible dialect"): what the gateway offers, strictly, so an unsupported field is refused
 * naming it; `tracing` is accepted and ignored. `reasoning` and `prompt` are refused where the model's
 * provider cannot honour them; `parallel_tool_calls`, `truncation` and `include` are hints, reported in
 * session.updated as what takes effect.
 */
export const RealtimeSessionSettings = z.strictObject({
  instructions: z
    .string()
    .max(64 * 1024)
    .optional(),
  audio: z
    .strictObject({
      input: z
        .strictObject({
          format: GaAudioFormat.optional(),
          turn_detection: z.discriminatedUnion('type', [ServerVad, SemanticVad]).nullable().optional(),
          transcription: z
            .strictObject({
              model: z.string().min(1).max(200).optional(),
              language: z.string().max(32).optional(),
              prompt: z.string().max(4096).optional(),
            })
            .nullable()
            .optional(),
          noise_reduction: z
            .strictObject({ type: z.enum(['near_field', 'far_field']) })
            .nullable()
            .optional(),
        })
        .optional(),
      output: z
        .strictObject({
          format: GaAudioFormat.optional(),
          voice: z.string().min(1).max(64).optional(),
          speed: z.number().min(0.25).max(1.5).optional(),
        })
        .optional(),
    })
    .optional(),
  tools: z.array(FunctionTool).max(128).optional(),
  tool_choice: ToolChoice.optional(),
  output_modalities: z.union([z.tuple([z.literal('audio')]), z.tuple([z.literal('text')])]).optional(),
  max_output_tokens: z.union([z.int().min(1).max(4096), z.literal('inf')]).optional(),
  tracing: z.unknown().optional(),
  reasoning: Reasoning.optional(),
  prompt: PromptReference.nullable().optional(),
  parallel_tool_calls: z.boolean().optional(),
  truncation: Truncation.optional(),
  include: z.array(IncludeField).max(1).optional(),
});
export type RealtimeSessionSettings = z.infer<typeof RealtimeSessionSettings>;

/**
 * `session.update` in the OpenAI-compatible dialect (decisions.md): OpenAI's GA session, `type: "realtime"`.
 * `model` is accepted and changes nothing (SDKs send their default there): the session keeps its model.
 */
export const OpenAISessionUpdateEvent = z.strictObject({
  type: z.literal('session.update'),
  event_id: z.string().min(1).max(128).optional(),
  session: RealtimeSessionSettings.extend({ type: z.literal('realtime'), model: z.string().max(200).optional() }),
});
export type OpenAISessionUpdateEvent = z.infer<typeof OpenAISessionUpdateEvent>;

/** A session's `type`: `realtime` only; transcription-only sessions are refused by name (decisions.md). */
export const RealtimeSessionType = z.literal('realtime', {
  error: (issue) =>
    issue.input === 'transcription'
      ? 'transcription sessions are not offered yet: the only session type is "realtime"'
      : 'the only session type is "realtime"',
});

/** `POST /v1/realtime/client_secrets`: OpenAI's body; `session.model` is a catalog id. */
export const CreateRealtimeClientSecretRequest = z.strictObject({
  expires_after: ExpiresAfter.optional(),
  session: RealtimeSessionSettings.extend({ type: RealtimeSessionType, model: ModelId }),
});
export type CreateRealtimeClientSecretRequest = z.infer<typeof CreateRealtimeClientSecretRequest>;

/** `POST /v1/voice/sessions/{id}/client_secrets`: an optional body. */
export const CreateSessionClientSecretRequest = z.strictObject({ expires_after: ExpiresAfter.optional() });
export type CreateSessionClientSecretRequest = z.infer<typeof CreateSessionClientSecretRequest>;

export const ClientSecret = z.strictObject({
  value: z.string().regex(CLIENT_SECRET_PATTERN),
  expires_at: z.int(),
});
export type ClientSecret = z.infer<typeof ClientSecret>;

/** Answer of `POST /v1/realtime/client_secrets`: the secret and the OpenAI-shaped session with its gateway id. */
export const RealtimeClientSecretResponse = ClientSecret.extend({
  session: RealtimeSessionSettings.extend({
    type: z.literal('realtime'),
    object: z.literal('realtime.session'),
    id: z.string(),
    model: ModelId,
    expires_at: z.int(),
  }),
});
export type RealtimeClientSecretResponse = z.infer<typeof RealtimeClientSecretResponse>;
