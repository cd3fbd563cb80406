// One list of what counts as secret, shared by the span processor and the logger, so a log line and a
// span can never disagree about what may be recorded.

export const REDACTED = '[REDACTED]';

/** Attribute / field names that may carry a credential or audio. */
const SENSITIVE_NAME = /authorization|cookie|api[_-]?key|apikey|token|secret|password|passwd|credential|audio|x-goog-api-key/i;

/** Query parameters whose value is dropped wherever a URL or query string is recorded. */
export const SENSITIVE_QUERY_PARAMS = [
  'key',
  'api_key',
  'apikey',
  'api-key',
  'token',
  'access_token',
  'auth',
  'authorization',
  'secret',
  'password',
];

// `name=value` after `?`, `&` or at the start (a bare `url.query` attribute) where the name contains
// key / token / auth / secret / password; session_id is kept.
const SENSITIVE_QUERY = /((?:^|[?&])[^=&#?\s]*(?:key|token|auth|secret|passw)[^=&#\s]*=)[^&#\s]*/gi;

// Credentials by shape: our API keys and client secrets, bearer tokens and the upstream providers' key
// formats. Key shapes have no leading word boundary: `_` is a word character, so `\b` would miss a key
// glued after one (`/v1/voice/sessions/vs_x_vr_sk_…`).
const SECRET_PATTERNS: readonly [RegExp, string][] = [
  [/\b(Bearer)\s+[^\s,;"']+/gi, `$1 ${REDACTED}`],
  [/\b(Basic)\s+[A-Za-z0-9+/=]{8,}/gi, `$1 ${REDACTED}`],
  [/vr_sk_[A-Za-z0-9]+/g, `vr_sk_${REDACTED}`],
  // Client secrets: `ek_` and at least 32 base62 characters (decisions.md); ids never contain `ek_`.
  [/ek_[A-Za-z0-9]{32,}/g, `ek_${REDACTED}`],
  [/sk-[A-Za-z0-9_-]{16,}/g, `sk-${REDACTED}`],
  [/AIza[0-9A-Za-z_-]{30,}/g, REDACTED],
];

const QUICK_CHECK = /bearer|basic|vr_sk_|ek_|sk-|AIza|[?&=]/i;

/** True when a field of this name must not be recorded with a string (or array) value. */
export function isSensitiveName(name: string): boolean {
  return SENSITIVE_NAME.test(name);
}

/**
 * Removes credentials from free text, wherever they sit (path, query, message): bearer tokens, `vr_sk_`
 * keys, `ek_` client secrets, provider keys, secret query values.
 */
export function redactString(value: string): string {
  if (!QUICK_CHECK.test(value)) return value;
  let out = value.replace(SENSITIVE_QUERY, `$1${REDACTED}`);
  for (const [pattern, replacement] of SECRET_PATTERNS) out = out.replace(pattern, replacement);
  return out;
}
