import { ERROR_STATUS, type ErrorCode } from '@s2s/contract';

/** The one error family: a public code, its HTTP status, whether a retry may succeed, and the cause. */
export class AppError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly retryable: boolean;

  constructor(code: ErrorCode, message: string, opts: { retryable?: boolean; cause?: unknown } = {}) {
    super(message, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.name = 'AppError';
    this.code = code;
    this.status = ERROR_STATUS[code];
    this.retryable = opts.retryable ?? this.status >= 500;
  }
}

export function isAppError(err: unknown): err is AppError {
  return err instanceof AppError;
}

export const errors = {
  invalidRequest: (message: string) => new AppError('invalid_request', message),
  invalidKey: () => new AppError('invalid_vr_sk', 'The API key is invalid, revoked, or does not own this resource.'),
  sessionNotFound: () => new AppError('session_not_found', 'No session with this id exists for this key.'),
  sessionExpired: () => new AppError('session_expired', 'The session has ended and can no longer be used.'),
  modelNotFound: () => new AppError('model_not_found', 'The selected model is not available to this key.'),
  insufficientBalance: () => new AppError('insufficient_wallet_balance', 'The wallet cannot cover the preauthorization of this session.'),
  idempotencyConflict: () => new AppError('idempotency_conflict', 'This Idempotency-Key was already used with a different request.'),
  sessionTerminationFailed: () =>
    new AppError(
      'session_termination_failed',
      'The session could not be settled in time. It will still be settled exactly once; retry the request to read its terminal state.',
    ),
};
