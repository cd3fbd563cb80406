import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type { AgentLimits } from './agent/types.js';
import { wsUrl } from './env-fields.js';
import { PROVIDER_ENV, type ContinuityPolicy } from './providers/index.js';
import { CommonEnv, SessionEnv, envInt, envOriginList, envPort, parseEnv, z } from '@s2s/core';

/** A fresh relay id per process start: a restarted process must not renew the lease of the one it replaces. */
function defaultRelayId(): string {
  return `${hostname()}-${process.pid}-${randomBytes(3).toString('hex')}`.replace(/[^A-Za-z0-9._-]/g, '_').slice(-128);
}

/** The relay's environment; its parsed output is the relay's config. */
export const RelayConfig = CommonEnv.extend({
  // Interface to listen on: loopback on a developer machine, 0.0.0.0 in a container.
  HOST: z.string().min(1).default('127.0.0.1'),
  // Realtime port; 0 picks a free one (tests, benchmarks).
  RELAY_PORT: envPort(8081),
  // Name of this relay process in attachments, checkpoints and its lease; unique per process start
  // (default <hostname>-<pid>-<random>). Billing waits for the final checkpoints of a relay whose lease is alive.
  RELAY_ID: z
    .string()
    .regex(/^[A-Za-z0-9._-]{1,128}$/)
    .optional(),
  // How often the relay renews its lease in relay_leases.
  RELAY_LEASE_RENEW_MS: envInt(2000, { min: 50, max: 60_000 }),
  // Each renewal extends the lease to the database's now() + this; past it billing treats the relay as gone.
  RELAY_LEASE_TTL_MS: envInt(10_000, { min: 200, max: 600_000 }),
  // Base of `realtime.url` in the session resource; the same value the control plane uses.
  REALTIME_PUBLIC_URL: wsUrl().default('ws://127.0.0.1:8081/v1/realtime'),
  // Largest client event; a bigger one closes the socket with 1009.
  REALTIME_MAX_EVENT_BYTES: envInt(1_048_576, { min: 1024, max: 64 * 1_048_576 }),
  // While usage changes, a checkpoint at least this often: a relay crash loses at most this much audio each way.
  CHECKPOINT_INTERVAL_MS: envInt(250, { min: 10, max: 1000 }),
  // How often the relay re-reads the sessions it holds, to catch a replacement or end it missed on the bus.
  RECONCILE_INTERVAL_MS: envInt(5000, { min: 50, max: 60_000 }),
  // After SIGTERM: every socket gets 1012 within this; the process stays (lease renewed) until every final
  // checkpoint is published, however long the bus is down.
  DRAIN_TIMEOUT_MS: envInt(10_000, { min: 100, max: 120_000 }),
  // A client gone mid-answer: how long the upstream may keep producing (and being metered) before it stops.
  RESPONSE_GRACE_MS: envInt(10_000, { min: 0, max: 60_000 }),
  // Opening an upstream session (all retries included) gives up after this.
  PROVIDER_CONNECT_TIMEOUT_MS: envInt(5000, { min: 100, max: 60_000 }),
  // Continuity (openai, azure, local): the longest upstream connection the provider allows (OpenAI: 60 min);
  // a session moves to a new connection before it (0: only on the provider's announcement or a loss) …
  UPSTREAM_MAX_CONNECTION_MS: envInt(3_600_000, { min: 0, max: 7 * 86_400_000 }),
  // … planned this long before the cap and made at the first quiet moment (no answer under way) …
  UPSTREAM_RECONNECT_MARGIN_MS: envInt(60_000, { min: 1000, max: 3_600_000 }),
  // … with this many connection attempts (backoff 100 ms doubling) before the session fails upstream_unavailable.
  UPSTREAM_RECONNECT_ATTEMPTS: envInt(3, { min: 1, max: 20 }),
  // The providers' own (providers/<name>/provider.ts): LOCAL_PROVIDER_*, OPENAI_*, AZURE_OPENAI_*, GEMINI_*.
  ...PROVIDER_ENV,
  // Sessions created by the legacy `/v1/realtime?model=` alias snapshot the same settings, and apply the same
  // per-key limits, as the control plane's: the variables they share (@s2s/core SessionEnv).
  ...SessionEnv,
  // Browser origins that may open realtime sockets (comma-separated, or *); unset: any origin, since a
  // client secret already scopes its session. A request without Origin (not a browser) always passes.
  REALTIME_ALLOWED_ORIGINS: envOriginList(),
  // WebRTC (POST /v1/realtime/calls): the one UDP port every call of this relay shares; 0 picks a free one
  // (npm start, tests). Behind NAT it must be a fixed port the clients can reach (docs/operations.md).
  WEBRTC_UDP_PORT: envPort(0),
  // The address the UDP port binds; unset: the first announced address when it is this host's, else 0.0.0.0.
  WEBRTC_HOST: z.string().min(1).optional(),
  // The addresses written into the SDP answer as ICE candidates (comma-separated IPs, the public one first);
  // unset: this host's interfaces.
  WEBRTC_ANNOUNCED_ADDRESSES: z
    .string()
    .optional()
    .transform((v) =>
      (v ?? '')
        .split(',')
        .map((a) => a.trim())
        .filter((a) => a !== ''),
    )
    .pipe(z.array(z.union([z.ipv4(), z.ipv6()]))),
  // Phone streams (GET /v1/telephony/twilio): with Twilio's auth token set, an upgrade without a valid
  // X-Twilio-Signature of its URL is refused with 403 before the upgrade (docs/telephony.md).
  TWILIO_AUTH_TOKEN: z.string().min(1).optional(),
  // Phone streams (GET /v1/telephony/telnyx): with Telnyx's public key set (base64 of the raw 32-byte Ed25519
  // key, as Mission Control shows it), an upgrade without a valid telnyx-signature-ed25519 is refused with 403.
  TELNYX_PUBLIC_KEY: z
    .string()
    .optional()
    .refine((v) => v === undefined || Buffer.from(v, 'base64').length === 32, 'must be the base64 of a 32-byte Ed25519 key'),
  // Connections in the PostgreSQL pool.
  DB_POOL_SIZE: envInt(8, { min: 1, max: 200 }),
  // Voice-agent limits (decisions.md): instructions size in bytes (UTF-8) …
  AGENT_MAX_INSTRUCTIONS_BYTES: envInt(64 * 1024, { min: 1, max: 1_048_576 }),
  // … tools in one session.update or response.create …
  AGENT_MAX_TOOLS: envInt(128, { min: 0, max: 1024 }),
  // … one tool's parameters JSON Schema, in bytes …
  AGENT_MAX_TOOL_SCHEMA_BYTES: envInt(16 * 1024, { min: 16, max: 1_048_576 }),
  // … one text part (or function call output), in bytes …
  AGENT_MAX_TEXT_PART_BYTES: envInt(64 * 1024, { min: 1, max: 1_048_576 }),
  // … and items in one conversation.
  AGENT_MAX_ITEMS: envInt(4096, { min: 1, max: 100_000 }),
})
  .superRefine((e, ctx) => {
    if (e.UPSTREAM_MAX_CONNECTION_MS > 0 && e.UPSTREAM_RECONNECT_MARGIN_MS >= e.UPSTREAM_MAX_CONNECTION_MS) {
      ctx.addIssue({
        code: 'custom',
        path: ['UPSTREAM_RECONNECT_MARGIN_MS'],
        message: 'must be less than UPSTREAM_MAX_CONNECTION_MS',
      });
    }
    if (e.RELAY_LEASE_TTL_MS < 2 * e.RELAY_LEASE_RENEW_MS) {
      ctx.addIssue({
        code: 'custom',
        path: ['RELAY_LEASE_TTL_MS'],
        message: 'must be at least twice RELAY_LEASE_RENEW_MS, so one late renewal does not expire the lease',
      });
    }
  })
  // A relay always has an id: the configured one or one of its own.
  .transform((e) => ({ ...e, RELAY_ID: e.RELAY_ID ?? defaultRelayId() }));

export type Config = z.output<typeof RelayConfig>;

/** Parses the relay's environment; throws one error naming every bad variable. */
export function loadConfig(env: Record<string, string | undefined>): Config {
  return parseEnv(RelayConfig, env);
}

/** Moving sessions to new upstream connections (UPSTREAM_*). */
export function continuityOf(config: Config): Pick<ContinuityPolicy, 'maxConnectionMs' | 'marginMs' | 'attempts'> {
  return {
    maxConnectionMs: config.UPSTREAM_MAX_CONNECTION_MS,
    marginMs: config.UPSTREAM_RECONNECT_MARGIN_MS,
    attempts: config.UPSTREAM_RECONNECT_ATTEMPTS,
  };
}

/** The voice-agent limits (AGENT_MAX_*). */
export function agentLimitsOf(config: Config): AgentLimits {
  return {
    maxInstructionsBytes: config.AGENT_MAX_INSTRUCTIONS_BYTES,
    maxTools: config.AGENT_MAX_TOOLS,
    maxToolSchemaBytes: config.AGENT_MAX_TOOL_SCHEMA_BYTES,
    maxTextPartBytes: config.AGENT_MAX_TEXT_PART_BYTES,
    maxItems: config.AGENT_MAX_ITEMS,
  };
}

/** The WebRTC endpoint's UDP socket (WEBRTC_*). */
export function webrtcOf(config: Config) {
  return {
    port: config.WEBRTC_UDP_PORT,
    ...(config.WEBRTC_HOST === undefined ? {} : { host: config.WEBRTC_HOST }),
    announcedAddresses: config.WEBRTC_ANNOUNCED_ADDRESSES,
  };
}
