import type { EndCause, EndReason, SessionStatus, TerminalStatus } from '@s2s/contract';
import { TERMINAL_STATUSES } from '@s2s/contract';

export function isTerminal(status: string): status is TerminalStatus {
  return (TERMINAL_STATUSES as readonly string[]).includes(status);
}

/** The cause an end request names: an absent reason is the client closing it. */
export function causeForEndReason(reason: EndReason | undefined): EndCause {
  return reason ?? 'client_closed';
}

/** Terminal status by cause (decisions.md, "Terminal status by cause"). */
export function terminalStatusFor(cause: EndCause, current: SessionStatus): TerminalStatus {
  switch (cause) {
    case 'client_closed':
      return current === 'active' ? 'completed' : 'cancelled';
    case 'timeout':
    case 'idle_timeout':
    case 'max_duration':
      return 'expired';
    case 'error':
    case 'upstream_failure':
    case 'relay_lost':
      return 'failed';
    case 'budget_exhausted':
      return 'completed';
  }
}

export interface ExpiryClock {
  lastActivityAt: Date;
  idleTimeoutSeconds: number;
  maxEndsAt: Date;
}

/** When the session expires if it stays idle: the idle deadline, capped by the maximum length. */
export function expiresAt(s: ExpiryClock): Date {
  const idle = s.lastActivityAt.getTime() + s.idleTimeoutSeconds * 1000;
  return new Date(Math.min(idle, s.maxEndsAt.getTime()));
}

/** Which expiry, if any, a session has reached at `now`. */
export function expiryCause(s: ExpiryClock, now: Date): EndCause | null {
  if (now.getTime() >= s.maxEndsAt.getTime()) return 'max_duration';
  if (now.getTime() >= s.lastActivityAt.getTime() + s.idleTimeoutSeconds * 1000) return 'idle_timeout';
  return null;
}
