import { OPENAI_KEY_SUBPROTOCOL_PREFIX, OPENAI_REALTIME_SUBPROTOCOL, REALTIME_PROTOCOL, SVC_AUTH_SUBPROTOCOL_PREFIX } from '@s2s/contract';
import { bearerToken, errors, isApiKeyShaped, isClientSecretShaped } from '@s2s/core';
import type { Dialect } from '../codecs/index.js';

export type { Dialect };

/** How the client proved who it is: an API key (Authorization only) or an ephemeral client secret. */
export type Credential = { kind: 'api_key'; authorization: string | undefined } | { kind: 'client_secret'; secret: string };

export interface Negotiated {
  dialect: Dialect;
  /** The subprotocol to echo, or null for none; never one that carries a credential. */
  protocol: string | null;
  credential: Credential;
}

/** Parts of the offer that say nothing to the gateway (SDK markers). */
const IGNORED_PREFIXES = ['openai-agents-sdk.', 'openai-beta.'];

/**
 * Subprotocol negotiation and credential selection before the upgrade (decisions.md, "The legacy path",
 * "The OpenAI-compatible dialect", "Ephemeral client secrets"). Pure: the caller authenticates what this picks.
 * - `svc-realtime-v1` offered: that protocol. The canonical `?session_id=` path requires it (400 otherwise).
 * - On the legacy path otherwise: the OpenAI dialect, echoing `realtime` only when it was offered.
 * - A credential in a subprotocol (`openai-insecure-api-key.…`, `svc-realtime-v1.auth.…`) must be an `ek_`
 *   client secret: an API key there is 401 (secret keys stay server-side), anything else 401 invalid secret.
 * - `Authorization: Bearer ek_…` is a client secret too; any other bearer is an API key.
 */
export function negotiate(input: { offered: string | undefined; authorization: string | undefined; legacyPath: boolean }): Negotiated {
  const offered = (input.offered ?? '')
    .split(',')
    .map((p) => p.trim())
    .filter((p) => p !== '' && !IGNORED_PREFIXES.some((prefix) => p.startsWith(prefix)));

  let fromProtocol: string | null = null;
  for (const p of offered) {
    const prefix = [OPENAI_KEY_SUBPROTOCOL_PREFIX, SVC_AUTH_SUBPROTOCOL_PREFIX].find((x) => p.startsWith(x));
    if (prefix === undefined) continue;
    const secret = p.slice(prefix.length);
    if (isApiKeyShaped(secret)) throw errors.apiKeyInSubprotocol();
    if (!isClientSecretShaped(secret) || (fromProtocol !== null && fromProtocol !== secret)) throw errors.invalidClientSecret();
    fromProtocol = secret;
  }

  const bearer = bearerToken(input.authorization);
  let credential: Credential;
  if (bearer !== null && isClientSecretShaped(bearer)) {
    if (fromProtocol !== null && fromProtocol !== bearer) throw errors.invalidClientSecret();
    credential = { kind: 'client_secret', secret: bearer };
  } else if (fromProtocol !== null) {
    if (bearer !== null) throw errors.invalidRequest('Present one credential: an Authorization header or a client secret subprotocol.');
    credential = { kind: 'client_secret', secret: fromProtocol };
  } else {
    credential = { kind: 'api_key', authorization: input.authorization };
  }

  if (offered.includes(REALTIME_PROTOCOL)) return { dialect: 'svc-realtime-v1', protocol: REALTIME_PROTOCOL, credential };
  if (!input.legacyPath) {
    throw errors.invalidRequest(`The ${REALTIME_PROTOCOL} subprotocol is required (Sec-WebSocket-Protocol).`);
  }
  return { dialect: 'openai', protocol: offered.includes(OPENAI_REALTIME_SUBPROTOCOL) ? OPENAI_REALTIME_SUBPROTOCOL : null, credential };
}

/**
 * The `Origin` check of browser upgrades (REALTIME_ALLOWED_ORIGINS): unset allows any origin, since a client
 * secret already scopes the session; a request without `Origin` is not a browser and passes.
 */
export function checkOrigin(origin: string | undefined, allowed: readonly string[] | '*' | undefined): void {
  if (origin === undefined || allowed === undefined || allowed === '*') return;
  if (!allowed.includes(origin.toLowerCase())) throw errors.originNotAllowed();
}
