/**
 * The uncommitted input of a session on the absolute byte clock of its input stream. It counts every
 * byte (input usage is billed on all of it) but may forget audio it will never play back, so a client
 * that streams silence for an hour does not grow the simulator's memory.
 */
export class InputBuffer {
  /** Absolute start of the uncommitted span. */
  private start = 0;
  /** Absolute end: every byte appended so far. */
  private end = 0;
  /** Absolute start of the audio still held in `chunks` (start <= keptStart <= end). */
  private keptStart = 0;
  private chunks: Buffer[] = [];

  get uncommittedBytes(): number {
    return this.end - this.start;
  }

  get totalBytes(): number {
    return this.end;
  }

  append(pcm: Buffer): void {
    this.chunks.push(pcm);
    this.end += pcm.length;
  }

  /** Drops held audio before absolute byte `pos`; the span it covered still counts as input. */
  forget(pos: number): void {
    const target = Math.min(pos, this.end);
    while (this.keptStart < target && this.chunks.length > 0) {
      const first = this.chunks[0]!;
      const drop = target - this.keptStart;
      if (first.length <= drop) {
        this.chunks.shift();
        this.keptStart += first.length;
      } else {
        this.chunks[0] = first.subarray(drop);
        this.keptStart += drop;
      }
    }
  }

  /**
   * Commits the span up to absolute byte `endPos`: returns how many input bytes it covered and the held
   * audio of it with that audio's absolute start.
   */
  take(endPos: number): { inputBytes: number; audio: Buffer; audioStart: number } {
    const cut = Math.max(this.start, Math.min(endPos, this.end));
    const inputBytes = cut - this.start;
    const audioStart = this.keptStart;
    const held = Buffer.concat(this.chunks);
    const audio = held.subarray(0, Math.max(0, cut - this.keptStart));
    const rest = held.subarray(audio.length);
    this.chunks = rest.length > 0 ? [rest] : [];
    this.start = cut;
    this.keptStart = Math.max(this.keptStart, cut);
    return { inputBytes, audio, audioStart };
  }

  clear(): void {
    this.start = this.end;
    this.keptStart = this.end;
    this.chunks = [];
  }
}
