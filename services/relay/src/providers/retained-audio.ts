import { Audio } from '../audio.js';

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

/**
 * The input of the turn under way: the newest `keep` decoded bytes of what was appended (the oldest are let
 * go first), kept in pooled slabs in the form each append came in: its base64 as is (a copy of its bytes,
 * never decoded while the turn goes on), or its PCM when it came as PCM. Decoded only when a new upstream
 * connection hears it again (chunks()), which is rare. A piece never spans two slabs.
 */
export class RetainedAudio {
  /** Slabs in use, oldest first; `slabs[0]` is slab number `firstSlab` (pieces name slabs by number). */
  private readonly slabs: Buffer[] = [];
  private firstSlab = 0;
  /** Where the next piece goes in the newest slab. */
  private tail = 0;
  /** The pieces, oldest first from `first`: slab number, offset, stored length, decoded bytes, base64 or PCM. */
  private readonly pieceSlab: number[] = [];
  private readonly pieceAt: number[] = [];
  private readonly pieceLength: number[] = [];
  private readonly pieceBytes: number[] = [];
  private readonly pieceIsBase64: boolean[] = [];
  private first = 0;
  /** Decoded bytes of the first piece already let go. */
  private skip = 0;
  /** Decoded bytes kept. */
  private length = 0;

  constructor(private readonly pool: SlabPool = SHARED_POOL) {}

  get bytes(): number {
    return this.length;
  }

  /** Appends `audio`, then lets the oldest go until at most `keep` decoded bytes are kept. */
  append(audio: Audio, keep: number): void {
    const n = audio.bytes;
    if (n === 0) return;
    const isBase64 = audio.isBase64;
    const stored = isBase64 ? audio.base64Length : n;
    let slab = this.slabs[this.slabs.length - 1];
    if (slab === undefined || this.tail + stored > slab.length) {
      // A piece larger than a slab gets a buffer of its own, which is not pooled.
      slab = stored > SLAB_BYTES ? Buffer.allocUnsafe(stored) : this.pool.take();
      this.slabs.push(slab);
      this.tail = 0;
    }
    if (isBase64) audio.writeBase64To(slab, this.tail);
    else audio.writeTo(slab, this.tail);
    this.pieceSlab.push(this.firstSlab + this.slabs.length - 1);
    this.pieceAt.push(this.tail);
    this.pieceLength.push(stored);
    this.pieceBytes.push(n);
    this.pieceIsBase64.push(isBase64);
    this.tail += stored;
    this.length += n;
    if (this.length > keep) this.drop(this.length - keep);
  }

  /** The kept bytes, decoded, as audio of at most one slab each, copied (the slabs go on being reused). */
  chunks(): Audio[] {
    if (this.length === 0) return [];
    const all = Buffer.allocUnsafe(this.length);
    let at = 0;
    for (let k = this.first; k < this.pieceSlab.length; k++) {
      const slab = this.slabs[this.pieceSlab[k]! - this.firstSlab]!;
      const from = this.pieceAt[k]!;
      const to = from + this.pieceLength[k]!;
      const pcm = this.pieceIsBase64[k] ? Buffer.from(slab.toString('latin1', from, to), 'base64') : slab.subarray(from, to);
      const skip = k === this.first ? this.skip : 0;
      at += pcm.copy(all, at, skip);
    }
    const out: Audio[] = [];
    for (let from = 0; from < all.length; from += SLAB_BYTES)
      out.push(Audio.ofPcm(all.subarray(from, Math.min(all.length, from + SLAB_BYTES))));
    return out;
  }

  /** Lets everything go (a commit, a clear, the end of the connection); the slabs return to the pool. */
  clear(): void {
    for (const slab of this.slabs) if (slab.length === SLAB_BYTES) this.pool.give(slab);
    this.slabs.length = 0;
    this.firstSlab = 0;
    this.tail = 0;
    this.pieceSlab.length = 0;
    this.pieceAt.length = 0;
    this.pieceLength.length = 0;
    this.pieceBytes.length = 0;
    this.pieceIsBase64.length = 0;
    this.first = 0;
    this.skip = 0;
    this.length = 0;
  }

  private drop(n: number): void {
    this.length -= n;
    if (this.length === 0) return this.clear();
    this.skip += n;
    while (this.skip >= this.pieceBytes[this.first]!) this.skip -= this.pieceBytes[this.first++]!;
    const keepFrom = this.pieceSlab[this.first]!;
    while (this.firstSlab < keepFrom) {
      const slab = this.slabs.shift()!;
      if (slab.length === SLAB_BYTES) this.pool.give(slab);
      this.firstSlab++;
    }
    // Forget the pieces let go, now and then (not per frame).
    if (this.first >= 256 && this.first * 2 >= this.pieceSlab.length) {
      for (const a of [this.pieceSlab, this.pieceAt, this.pieceLength, this.pieceBytes, this.pieceIsBase64] as unknown[][])
        a.splice(0, this.first);
      this.first = 0;
    }
  }
}
