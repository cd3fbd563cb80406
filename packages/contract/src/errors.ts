import { z } from 'zod';

/** Every error code the gateway answers, with its HTTP status (api-v1 §7, decisions.md). */
export const ERROR_STATUS = {
  invalid_request: 400,
  invalid_vr_sk: 401,
  invalid_admin_token: 401,
  /** An `ek_` client secret that is unknown, expired, or minted for another session. */
  invalid_client_secret: 401,
  insufficient_wallet_balance: 402,
  /** A browser upgrade whose Origin is not in REALTIME_ALLOWED_ORIGINS. */
  origin_not_allowed: 403,
  /** A phone stream's upgrade without a valid signature of its provider (TWILIO_AUTH_TOKEN, TELNYX_PUBLIC_KEY set). */
  invalid_signature: 403,
  model_not_found: 404,
  session_not_found: 404,
  key_not_found: 404,
  wallet_not_found: 404,
  not_found: 404,
  request_timeout: 408,
  idempotency_conflict: 409,
  session_termination_failed: 409,
  session_expired: 410,
  rate_limited: 429,
  rate_limit_exceeded: 429,
  request_header_fields_too_large: 431,
  internal_error: 500,
  session_store_unavailable: 503,
  service_unavailable: 503,
} as const;

export type ErrorCode = keyof typeof ERROR_STATUS;
export const ErrorCode = z.enum(Object.keys(ERROR_STATUS) as [ErrorCode, ...ErrorCode[]]);

/** `error.type` by HTTP status (decisions.md, Errors). */
export const ERROR_TYPE_BY_STATUS: Readonly<Record<number, string>> = {
  400: 'invalid_request_error',
  401: 'authentication_error',
  402: 'billing_error',
  403: 'permission_error',
  404: 'not_found_error',
  408: 'invalid_request_error',
  409: 'conflict_error',
  410: 'gone_error',
  429: 'rate_limit_error',
  431: 'invalid_request_error',
  500: 'internal_error',
  503: 'service_unavailable_error',
};

export function errorTypeForStatus(status: number): string {
  return ERROR_TYPE_BY_STATUS[status] ?? (status >= 500 ? 'internal_error' : 'invalid_request_error');
}

export const ErrorBody = z.strictObject({
  type: z.string(),
  code: z.string(),
  message: z.string(),
  request_id: z.string(),
});
export type ErrorBody = z.infer<typeof ErrorBody>;

export const ErrorResponse = z.strictObject({ error: ErrorBody });
export type ErrorResponse = z.infer<typeof ErrorResponse>;

/** Codes of the realtime `error` event (decisions.md, Realtime). */
export const RealtimeErrorCode = z.enum([
  'invalid_audio_format',
  'invalid_event',
  'budget_exhausted',
  'upstream_unavailable',
  'internal_error',
  'input_audio_buffer_commit_empty',
  'response_cancel_not_active',
  // Voice agents (decisions.md, "The full realtime event model"): each names the field in error.param.
  'invalid_value',
  'limit_exceeded',
  'unsupported_parameter',
  'item_not_found',
  'call_id_not_found',
  'upstream_refused',
]);
export type RealtimeErrorCode = z.infer<typeof RealtimeErrorCode>;

export const REALTIME_ERROR_TYPE: Readonly<Record<RealtimeErrorCode, string>> = {
  invalid_audio_format: 'invalid_request_error',
  invalid_event: 'invalid_request_error',
  budget_exhausted: 'billing_error',
  upstream_unavailable: 'service_unavailable_error',
  internal_error: 'internal_error',
  input_audio_buffer_commit_empty: 'invalid_request_error',
  response_cancel_not_active: 'invalid_request_error',
  invalid_value: 'invalid_request_error',
  limit_exceeded: 'invalid_request_error',
  unsupported_parameter: 'invalid_request_error',
  item_not_found: 'invalid_request_error',
  call_id_not_found: 'invalid_request_error',
  upstream_refused: 'invalid_request_error',
};

/** WebSocket close codes (decisions.md, Realtime). */
export const CloseCode = {
  sessionEnded: 1000,
  policyViolation: 1008,
  invalidPayload: 1007,
  messageTooBig: 1009,
  internalError: 1011,
  relayDraining: 1012,
  replaced: 4001,
} as const;
export type CloseCode = (typeof CloseCode)[keyof typeof CloseCode];
