// The one retry helper: the backoff formula, the wait, and the loop every retrying caller runs.

/** A fraction of each delay drawn at random either way, so that processes do not retry in step. */
export const RETRY_JITTER = 0.2;

/**
 * Delay before retry `attempt` (1, 2, …): base·2^(attempt-1), capped at `capMs`, ± `jitter` of it
 * (RETRY_JITTER; 0 for an exact delay, e.g. a JetStream nak).
 */
export function backoffMs(attempt: number, baseMs: number, capMs: number, jitter = RETRY_JITTER): number {
  const raw = Math.min(capMs, baseMs * 2 ** Math.min(30, Math.max(0, attempt - 1)));
  return jitter === 0 ? raw : Math.round(raw * (1 - jitter + Math.random() * 2 * jitter));
}

export interface SleepOptions {
  /** Ends the wait early: the promise then resolves false. */
  signal?: AbortSignal;
  /** The wait alone does not keep the process alive (a retry that matters only while it runs). */
  unref?: boolean;
}

/** Resolves true after `ms`, or false as soon as `signal` aborts. */
export function sleep(ms: number, opts: SleepOptions = {}): Promise<boolean> {
  const { signal } = opts;
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve(false);
    const onAbort = () => {
      clearTimeout(timer);
      resolve(false);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve(true);
    }, ms);
    if (opts.unref) timer.unref();
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

export interface RetryOptions extends SleepOptions {
  /** Tries in all (first one included); unbounded when absent. */
  attempts?: number;
  /** Backoff before retry n: baseMs·2^(n-1) up to capMs, jittered (backoffMs). */
  baseMs: number;
  capMs: number;
  jitter?: number;
  /** Whether to go on after `err` on try `attempt` (1, 2, …); by default every error is retried. */
  shouldRetry?(err: unknown, attempt: number): boolean;
  /** Each failure that will be retried (to log it). */
  onRetry?(err: unknown, attempt: number): void;
}

/**
 * Runs `fn(attempt)` (1, 2, …) until it resolves; rethrows the last error when `shouldRetry` says no, the
 * attempts are spent or `signal` aborts during a wait.
 */
export async function retry<T>(fn: (attempt: number) => Promise<T>, opts: RetryOptions): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await fn(attempt);
    } catch (err) {
      const last = opts.attempts !== undefined && attempt >= opts.attempts;
      if (last || opts.signal?.aborted || (opts.shouldRetry && !opts.shouldRetry(err, attempt))) throw err;
      opts.onRetry?.(err, attempt);
      if (!(await sleep(backoffMs(attempt, opts.baseMs, opts.capMs, opts.jitter), opts))) throw err;
    }
  }
}
