import { Audio, type AudioFormat } from '../../audio.js';

/** One slab: 64 KiB, about 1.4 s of 24 kHz PCM16 (frames of 20 ms take 960 bytes of it). */
export const SLAB_BYTES = 64 * 1024;

/**
 * Free slabs shared by every session of the process, so a turn's audio costs a few long-lived buffers
 * outside the JS heap instead of one string per frame (which the garbage collector promoted and moved, frame
 * after frame, for the whole turn). Bounded: slabs given back beyond `maxFreeBytes` are left to the collector.
 */
export class SlabPool {
  private readonly free: Buffer[] = [];

  constructor(private readonly maxFreeBytes = 32 * 1024 * 1024) {}

  take(): Buffer {
    return this.free.pop() ?? Buffer.allocUnsafeSlow(SLAB_BYTES);
  }

  give(slab: Buffer): void {
    if ((this.free.length + 1) * SLAB_BYTES <= this.maxFreeBytes) this.free.push(slab);
  }

  /** Slabs waiting to be taken again. */
  get freeSlabs(): number {
    return this.free.length;
  }
}

const SHARED_POOL = new SlabPool();

/** Decoding target for base64 frames that end up split over two slabs (frames are far smaller). */
const SCRATCH = Buffer.allocUnsafeSlow(SLAB_BYTES);

/**
 * The input of the turn under way as one run of audio bytes, all of one format (the upstream connection's):
 * the newest `keep` bytes of what was appended (the oldest are let go first), decoded into pooled slabs.
 * What a new upstream connection hears again.
 */
export class RetainedAudio {
  /** The format of the bytes kept: that of the first audio appended since it was last empty. */
  private format: AudioFormat = 'pcm16';
  private readonly slabs: Buffer[] = [];
  /** Where the oldest kept byte is in the first slab. */
  private head = 0;
  /** Bytes kept. */
  private length = 0;

  constructor(private readonly pool: SlabPool = SHARED_POOL) {}

  get bytes(): number {
    return this.length;
  }

  /** Appends `audio`'s decoded bytes, then lets the oldest go until at most `keep` bytes are kept. */
  append(audio: Audio, keep: number): void {
    let n = audio.bytes;
    if (n === 0) return;
    if (this.length === 0) this.format = audio.format;
    const end = this.head + this.length;
    if (end === this.slabs.length * SLAB_BYTES) this.slabs.push(this.pool.take());
    let tail = end - (this.slabs.length - 1) * SLAB_BYTES;
    let slab = this.slabs[this.slabs.length - 1]!;
    if (tail + n <= SLAB_BYTES) {
      audio.writeTo(slab, tail);
    } else {
      // Split over two slabs (or more, for a frame larger than a slab).
      let src: Buffer = SCRATCH;
      if (n <= SCRATCH.length) audio.writeTo(SCRATCH, 0);
      else src = audio.pcm;
      let from = 0;
      while (n > 0) {
        const room = SLAB_BYTES - tail;
        const part = Math.min(room, n);
        src.copy(slab, tail, from, from + part);
        from += part;
        n -= part;
        tail += part;
        if (n > 0) {
          slab = this.pool.take();
          this.slabs.push(slab);
          tail = 0;
        }
      }
    }
    this.length += audio.bytes;
    if (this.length > keep) this.drop(this.length - keep);
  }

  /** The kept bytes as audio of at most one slab each, copied (the slabs go on being reused). */
  chunks(): Audio[] {
    const out: Audio[] = [];
    let at = this.head;
    let left = this.length;
    for (const slab of this.slabs) {
      if (left === 0) break;
      const n = Math.min(SLAB_BYTES - at, left);
      out.push(Audio.of(this.format, Buffer.from(slab.subarray(at, at + n))));
      left -= n;
      at = 0;
    }
    return out;
  }

  /** Lets everything go (a commit, a clear, the end of the connection); the slabs return to the pool. */
  clear(): void {
    for (const slab of this.slabs) this.pool.give(slab);
    this.slabs.length = 0;
    this.head = 0;
    this.length = 0;
  }

  private drop(n: number): void {
    this.head += n;
    this.length -= n;
    while (this.head >= SLAB_BYTES) {
      this.pool.give(this.slabs.shift()!);
      this.head -= SLAB_BYTES;
    }
    if (this.length === 0) this.clear();
  }
}
