/** decisions.md: more than 100 rejected events in 10 seconds closes the socket with 1008. */
export const ABUSE_LIMIT = 100;
export const ABUSE_WINDOW_MS = 10_000;

/**
 * The rejected events of one attachment within the last window, as a ring of timestamps: a client that
 * floods invalid frames costs no allocation per frame.
 */
export class AbuseWindow {
  private readonly times: Float64Array;
  private head = 0;
  private count = 0;

  constructor(
    private readonly limit = ABUSE_LIMIT,
    private readonly windowMs = ABUSE_WINDOW_MS,
  ) {
    this.times = new Float64Array(limit + 1);
  }

  /** Records one rejected event at `nowMs`; true once more than `limit` fall within the window. */
  record(nowMs: number): boolean {
    const cap = this.times.length;
    while (this.count > 0 && (this.times[this.head] as number) <= nowMs - this.windowMs) {
      this.head = (this.head + 1) % cap;
      this.count--;
    }
    if (this.count === cap) {
      // Already over the limit: the oldest entry makes room (the verdict stays the same).
      this.head = (this.head + 1) % cap;
      this.count--;
    }
    this.times[(this.head + this.count) % cap] = nowMs;
    this.count++;
    return this.count > this.limit;
  }
}
