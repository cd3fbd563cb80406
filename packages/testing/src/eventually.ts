// Waiting helpers for effects that land asynchronously (bus, database).

export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/** Polls `read` until `accept` holds (bounded), for effects that land asynchronously (bus, database). */
export async function eventually<T>(read: () => Promise<T> | T, accept: (v: T) => boolean, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await read();
    if (accept(v)) return v;
    if (Date.now() > deadline) return v;
    await sleep(20);
  }
}
