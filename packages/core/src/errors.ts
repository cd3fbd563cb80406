import type { ErrorCode } from '@s2s/contract';

/** Codes whose cause is passing (an outage, a slow settlement, a limit): the same request may succeed later. */
const RETRYABLE_CODES: ReadonlySet<ErrorCode> = new Set([
  'service_unavailable',
  'session_store_unavailable',
  'session_termination_failed',
  'rate_limited',
  'rate_limit_exceeded',
]);

/**
 * The one error family: a public code, whether a retry may succeed, and the cause. It knows no transport:
 * the HTTP status, the realtime close code and the JetStream verdict are each transport's mapper's business.
 */
export class AppError extends Error {
  readonly code: ErrorCode;
  readonly retryable: boolean;
  /** When the same request may succeed again (a limit refills): transports send it as `Retry-After`. */
  readonly retryAfterSeconds: number | undefined;

  constructor(code: ErrorCode, message: string, opts: { retryable?: boolean; cause?: unknown; retryAfterSeconds?: number } = {}) {
    super(message, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.name = 'AppError';
    this.code = code;
    this.retryable = opts.retryable ?? RETRYABLE_CODES.has(code);
    this.retryAfterSeconds = opts.retryAfterSeconds;
  }
}

/** Why a WebRTC SDP offer cannot be answered (decisions.md, "WebRTC"); metrics count refusals by it. */
export type SdpOfferProblem = 'malformed' | 'too_large' | 'no_audio' | 'no_data_channel' | 'unsupported_codec' | 'no_ice_credentials';

/** A refused SDP offer: a 400 `invalid_request` whose `problem` says which check failed. */
export class SdpOfferError extends AppError {
  readonly problem: SdpOfferProblem;

  constructor(problem: SdpOfferProblem, message: string) {
    super('invalid_request', message);
    this.name = 'SdpOfferError';
    this.problem = problem;
  }
}

export function isAppError(err: unknown): err is AppError {
  return err instanceof AppError;
}

/** What the public answers for an unexpected failure; the detail goes to the log only. */
export const INTERNAL_MESSAGE = 'An internal error occurred. Quote the request id when contacting support.';

export const errors = {
  invalidRequest: (message: string) => new AppError('invalid_request', message),
  invalidKey: () => new AppError('invalid_vr_sk', 'The API key is invalid, revoked, or does not own this resource.'),
  invalidClientSecret: () =>
    new AppError('invalid_client_secret', 'The client secret is invalid, expired, or was minted for another session.'),
  /** An API key offered where only a client secret may go (a subprotocol): secret keys stay server-side. */
  apiKeyInSubprotocol: () =>
    new AppError(
      'invalid_vr_sk',
      'API keys are not accepted in a WebSocket subprotocol; keep them server-side and mint a client secret (ek_) for the browser.',
    ),
  invalidSignature: () => new AppError('invalid_signature', 'The request does not carry a valid signature of the telephony provider.'),
  originNotAllowed: () => new AppError('origin_not_allowed', 'This Origin may not open realtime connections (REALTIME_ALLOWED_ORIGINS).'),
  invalidAdminToken: () => new AppError('invalid_admin_token', 'The admin token is missing or invalid.'),
  notFound: () => new AppError('not_found', 'No such route.'),
  sessionNotFound: () => new AppError('session_not_found', 'No session with this id exists for this key.'),
  sessionExpired: () => new AppError('session_expired', 'The session has ended and can no longer be used.'),
  modelNotFound: () => new AppError('model_not_found', 'The selected model is not available to this key.'),
  keyNotFound: () => new AppError('key_not_found', 'No API key with this id exists.'),
  walletNotFound: () => new AppError('wallet_not_found', 'No wallet with this id exists.'),
  insufficientBalance: () => new AppError('insufficient_wallet_balance', 'The wallet cannot cover the preauthorization of this session.'),
  idempotencyConflict: () => new AppError('idempotency_conflict', 'This Idempotency-Key was already used with a different request.'),
  /** A per-key limit (decisions.md, "Limits"): the message names it, Retry-After says when to try again. */
  rateLimitExceeded: (message: string, retryAfterSeconds: number) => new AppError('rate_limit_exceeded', message, { retryAfterSeconds }),
  sessionTerminationFailed: () =>
    new AppError(
      'session_termination_failed',
      'The session could not be settled in time. It will still be settled exactly once; retry the request to read its terminal state.',
    ),
  /** A dependency (database, bus) does not answer; `service_unavailable` everywhere but session end. */
  serviceUnavailable: (cause?: unknown, message = 'The service is temporarily unavailable; retry later.') =>
    new AppError('service_unavailable', message, { cause }),
  /** The session store does not answer while ending a session (api-v1 §7 names this code for end). */
  sessionStoreUnavailable: (cause?: unknown) =>
    new AppError('session_store_unavailable', 'The session store is unavailable; retry later.', { cause }),
  internal: (cause?: unknown) => new AppError('internal_error', INTERNAL_MESSAGE, { cause }),
};
