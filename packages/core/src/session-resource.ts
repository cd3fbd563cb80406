import {
  AUDIO_FORMAT,
  REALTIME_PROTOCOL,
  SESSION_MODE,
  type Capabilities,
  type ProviderUsage,
  type EndCause,
  type Rate,
  type RealtimeSessionSettings,
  type SessionStatus,
  type TerminalStatus,
  type VoiceSession,
} from '@s2s/contract';
import type { Usage } from './money.js';
import { expiresAt } from './status.js';

/** Everything the public session resource is made from, as the store reads it. */
export interface SessionView {
  id: string;
  status: SessionStatus;
  modelId: string;
  provider: string;
  capabilities: Capabilities;
  rateSnapshotId: string;
  pricingSource: string;
  createdAt: Date;
  lastActivityAt: Date;
  idleTimeoutSeconds: number;
  maxEndsAt: Date;
  preauthorizedCents: number;
  reservedCents: number;
  walletAvailableCents: number;
  /** Every usage counter: the attachments' newest checkpoints before settlement, the settled figures after. */
  usage: Usage;
  /** The usage split by the provider that served it (`usage.routes`); absent or null: not known. */
  usageRoutes?: ProviderUsage[] | null;
  billedCents: number;
  traceId: string;
}

/** A session as the services need it: the public view plus ownership, routing, rate and ending state. */
export interface SessionRecord extends SessionView {
  keyId: string;
  walletId: string;
  providerModel: string;
  /** Failover routes of the model after (provider, providerModel), in order; absent or empty: none. */
  fallbackRoutes?: { provider: string; providerModel: string }[];
  rate: Rate;
  endRequestedAt: Date | null;
  endCause: EndCause | null;
  terminalStatus: TerminalStatus | null;
  settledAt: Date | null;
  legacy: boolean;
  /** The session ends (client_closed) when its socket closes: the legacy alias, POST /v1/realtime/client_secrets. */
  endsWithSocket: boolean;
  /**
   * Settings to apply at attach (`voice_sessions.initial_settings`): the OpenAI-shaped `session` object of
   * POST /v1/realtime/client_secrets without `type` and `model`, already validated; null otherwise.
   */
  initialSettings: RealtimeSessionSettings | null;
}

/** A live API key as authentication resolves it. */
export interface AuthenticatedKey {
  keyId: string;
  walletId: string;
}

function urlWithSessionId(base: string, sessionId: string): string {
  const url = new URL(base);
  url.searchParams.set('session_id', sessionId);
  return url.toString();
}

// Letters and digits only, like the ids below: the query serializer writes it as it is.
const PLACEHOLDER = 'S2sSessionIdPlaceholder0';
// Session ids (`newId`) are letters, digits and `_`, which the serializer also leaves as they are.
const PLAIN_ID = /^[0-9A-Za-z_]+$/;
/** Per base URL: the realtime URL of a placeholder id, split around it (null: the base holds the placeholder). */
const urlTemplates = new Map<string, readonly [string, string] | null>();

function urlTemplate(base: string): readonly [string, string] | null {
  let template = urlTemplates.get(base);
  if (template === undefined) {
    const url = urlWithSessionId(base, PLACEHOLDER);
    const at = url.indexOf(PLACEHOLDER);
    template = at === -1 || url.includes(PLACEHOLDER, at + 1) ? null : [url.slice(0, at), url.slice(at + PLACEHOLDER.length)];
    if (urlTemplates.size < 16) urlTemplates.set(base, template);
  }
  return template;
}

/**
 * `base` with `session_id` set in its query, as `URL` writes it; the URL is parsed once per base (a deployment has
 * one), not once per session resource.
 */
export function realtimeUrl(base: string, sessionId: string): string {
  const template = PLAIN_ID.test(sessionId) ? urlTemplate(base) : null;
  return template === null ? urlWithSessionId(base, sessionId) : template[0] + sessionId + template[1];
}

const unixSeconds = (d: Date) => Math.floor(d.getTime() / 1000);

/** The public voice session resource (api-v1 §2.1; billing semantics of decisions.md "Money"). */
export function toVoiceSession(s: SessionView, realtimeBaseUrl: string): VoiceSession {
  return {
    id: s.id,
    object: 'voice.session',
    status: s.status,
    model: s.modelId,
    mode: SESSION_MODE,
    realtime: { url: realtimeUrl(realtimeBaseUrl, s.id), protocol: REALTIME_PROTOCOL },
    audio: { input: AUDIO_FORMAT, output: AUDIO_FORMAT },
    capabilities: s.capabilities,
    created_at: unixSeconds(s.createdAt),
    expires_at: unixSeconds(expiresAt(s)),
    billing: {
      preauthorized_cents: s.preauthorizedCents,
      balance_cents: s.walletAvailableCents,
      reserved_cents: s.reservedCents,
    },
    usage: {
      model: s.modelId,
      provider: s.provider,
      pricing_source: s.pricingSource,
      rate_snapshot_id: s.rateSnapshotId,
      audio_in_ms: s.usage.audio_in_ms,
      audio_out_ms: s.usage.audio_out_ms,
      billed_cents: s.billedCents,
      input_audio_tokens: s.usage.input_audio_tokens,
      input_text_tokens: s.usage.input_text_tokens,
      cached_input_tokens: s.usage.cached_input_tokens,
      output_audio_tokens: s.usage.output_audio_tokens,
      output_text_tokens: s.usage.output_text_tokens,
      transcribed_ms: s.usage.transcribed_ms,
      ...(s.usageRoutes ? { routes: s.usageRoutes } : {}),
    },
    trace_id: s.traceId,
  };
}
