import { readFileSync } from 'node:fs';
import { envPort, parseEnv, z } from '@s2s/core';

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
const httpUrl = z.url({ protocol: /^https?$/, error: 'must be an http:// or https:// URL' });

/** The edge's configuration (decisions.md, "Running it": one public origin). */
export const EdgeConfig = z
  .object({
    // Interface to listen on.
    HOST: z.string().min(1).default('127.0.0.1'),
    // The public port: the HTTP API and /v1/realtime on one origin; 0 picks a free one.
    HTTP_PORT: envPort(8080),
    // Where every request but /v1/realtime goes.
    CONTROL_PLANE_URL: httpUrl.default('http://127.0.0.1:8083'),
    // The relays, comma-separated; /v1/realtime upgrades are spread over them (any relay serves any session).
    RELAY_URLS: z
      .string()
      .default('http://127.0.0.1:8081')
      .transform((v) =>
        v
          .split(',')
          .map((s) => s.trim())
          .filter((s) => s !== ''),
      )
      .pipe(z.array(httpUrl).min(1)),
    // `ipc`: the parent (npm start) brokers connection handoffs to the relays, in RELAY_URLS order: a
    // /v1/realtime upgrade's connection goes to the relay once its request is read. `off`: the edge proxies
    // upgrades. With TLS the edge always proxies (the TLS state lives here).
    RELAY_HANDOFF: z.enum(['off', 'ipc']).default('off'),
    // PEM certificate chain and key: with both, the edge serves https and wss.
    TLS_CERT_FILE: z.string().min(1).optional(),
    TLS_KEY_FILE: z.string().min(1).optional(),
    LOG_LEVEL: z.enum(LOG_LEVELS).default('info'),
  })
  .superRefine((e, ctx) => {
    if ((e.TLS_CERT_FILE === undefined) !== (e.TLS_KEY_FILE === undefined)) {
      ctx.addIssue({ code: 'custom', path: ['TLS_KEY_FILE'], message: 'TLS_CERT_FILE and TLS_KEY_FILE go together' });
    }
  });
export type EdgeConfig = z.infer<typeof EdgeConfig>;

export function loadConfig(env: Record<string, string | undefined>): EdgeConfig {
  return parseEnv(EdgeConfig, env);
}

/** The certificate and key the configuration names, read once at start. */
export function tlsOf(config: EdgeConfig): { cert: Buffer; key: Buffer } | undefined {
  if (config.TLS_CERT_FILE === undefined || config.TLS_KEY_FILE === undefined) return undefined;
  return { cert: readFileSync(config.TLS_CERT_FILE), key: readFileSync(config.TLS_KEY_FILE) };
}
