/** Delay before retry `attempt` (1, 2, …): base·2^(attempt-1), capped, with ±20 % jitter so relays do not retry in step. */
export function backoffMs(attempt: number, baseMs: number, capMs: number): number {
  const raw = Math.min(capMs, baseMs * 2 ** Math.min(30, Math.max(0, attempt - 1)));
  return Math.round(raw * (0.8 + Math.random() * 0.4));
}

/** `unref`: the wait alone does not keep the process alive (a retry that only matters while it runs). */
export function sleep(ms: number, opts: { unref?: boolean } = {}): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    if (opts.unref) timer.unref();
  });
}

/** Waits for `p` to settle, at most `ms`; never rejects. */
export function settledWithin(p: Promise<unknown>, ms: number): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    const done = () => {
      clearTimeout(timer);
      resolve();
    };
    p.then(done, done);
  });
}
