/**
 * Cuts a stream of bytes into frames of a fixed size (telephony: 20 ms of G.711, 160 bytes), holding the
 * remainder for the next push; `flush` hands out what is held (a short last frame at the end of a response).
 */
export class FrameChunker {
  private held: Buffer = Buffer.alloc(0);

  constructor(readonly frameBytes: number) {}

  /** Bytes pushed and not yet handed out. */
  get pending(): number {
    return this.held.length;
  }

  /** The whole frames `bytes` completes. */
  push(bytes: Buffer): Buffer[] {
    const all = this.held.length === 0 ? bytes : Buffer.concat([this.held, bytes]);
    const frames: Buffer[] = [];
    let at = 0;
    for (; at + this.frameBytes <= all.length; at += this.frameBytes) frames.push(all.subarray(at, at + this.frameBytes));
    // A copy, so a held remainder does not pin the caller's (possibly large) buffer.
    this.held = Buffer.from(all.subarray(at));
    return frames;
  }

  /** What is held, as one short frame (none when nothing is held). */
  flush(): Buffer | null {
    if (this.held.length === 0) return null;
    const last = this.held;
    this.held = Buffer.alloc(0);
    return last;
  }

  /** Drops what is held (barge-in: the rest of the answer is not played). */
  clear(): void {
    this.held = Buffer.alloc(0);
  }
}
