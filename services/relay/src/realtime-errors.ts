import { CloseCode, type RealtimeErrorCode } from '@s2s/contract';
import { isAppError } from '@s2s/core';

/**
 * The realtime transport's one error mapper (decisions.md, "Realtime"): what the client is told, as an
 * `error` event and/or a close code, for every way an attachment can fail or end. Nothing else in the
 * relay picks a realtime error code or a close code.
 */

export interface RealtimeAnswer {
  /** An `error` event sent before the close (or alone, when the socket stays open). */
  event?: { code: RealtimeErrorCode; message: string };
  /** Absent: the socket stays open. */
  close?: { code: number; reason: string };
}

/** Why an attachment ends. */
export type FinishReason =
  | 'client_closed'
  /** A phone stream's `stop`: the caller hung up (the socket is closed with 1000 by us). */
  | 'hangup'
  | 'replaced'
  | 'end_requested'
  | 'budget_exhausted'
  | 'upstream_failure'
  | 'abuse'
  | 'auth_lost'
  | 'draining'
  | 'store_unavailable'
  | 'internal_error';

const INTERNAL_MESSAGE = 'An internal error occurred; the session has ended.';

const FINISH: Record<FinishReason, RealtimeAnswer> = {
  client_closed: {},
  hangup: { close: { code: CloseCode.sessionEnded, reason: 'call ended' } },
  replaced: { close: { code: CloseCode.replaced, reason: 'replaced by a newer attachment' } },
  end_requested: { close: { code: CloseCode.sessionEnded, reason: 'session ended' } },
  budget_exhausted: {
    event: { code: 'budget_exhausted', message: 'The session reached its preauthorized amount.' },
    close: { code: CloseCode.sessionEnded, reason: 'budget exhausted' },
  },
  upstream_failure: {
    event: { code: 'upstream_unavailable', message: 'The model is unavailable; the session has ended.' },
    close: { code: CloseCode.internalError, reason: 'upstream unavailable' },
  },
  abuse: { close: { code: CloseCode.policyViolation, reason: 'too many rejected events' } },
  auth_lost: { close: { code: CloseCode.policyViolation, reason: 'authorization lost' } },
  draining: { close: { code: CloseCode.relayDraining, reason: 'relay draining, attach again' } },
  // A retryable failure: the client may attach again, as after a drain.
  store_unavailable: { close: { code: CloseCode.relayDraining, reason: 'temporarily unavailable, attach again' } },
  internal_error: {
    event: { code: 'internal_error', message: INTERNAL_MESSAGE },
    close: { code: CloseCode.internalError, reason: 'internal error' },
  },
};

export function answerForFinish(reason: FinishReason): RealtimeAnswer {
  return FINISH[reason];
}

/**
 * The finish reason of an error thrown while serving an attachment, by the AppError's code and
 * `retryable`; anything else is internal (its detail goes to the log, never to the client).
 */
export function finishReasonForError(err: unknown): FinishReason {
  if (!isAppError(err)) return 'internal_error';
  switch (err.code) {
    case 'session_expired':
    case 'session_not_found':
      return 'end_requested';
    case 'invalid_vr_sk':
      return 'auth_lost';
    default:
      return err.retryable ? 'store_unavailable' : 'internal_error';
  }
}

/** Client requests the relay answers itself; the socket stays open. */
export const REQUEST_ERRORS = {
  commitEmpty: { code: 'input_audio_buffer_commit_empty', message: 'The input audio buffer is empty.' },
  cancelNotActive: { code: 'response_cancel_not_active', message: 'There is no response in progress to cancel.' },
  notReady: { code: 'invalid_event', message: 'The session is not ready for input yet.' },
  upstreamRefused: { code: 'internal_error', message: 'The model could not process the last request.' },
} as const satisfies Record<string, { code: RealtimeErrorCode; message: string }>;
