import { isBase64Alphabet } from './base64-alphabet.js';

/**
 * One piece of PCM16LE 24 kHz mono audio on its way through the relay, held in the form it arrived in:
 * base64 on the hot path (a client's append, an OpenAI-protocol delta), carried through to the other side
 * without being decoded and encoded again; raw bytes when a provider speaks bytes (Gemini after resampling).
 * Base64 read from a frame stays the frame's bytes (no string): a view of them, copied into the outgoing
 * frame. The other forms are made on first use, once. `bytes` is always the exact decoded size, the figure
 * metering counts (48 bytes = 1 ms).
 */
export class Audio {
  private constructor(
    private b64: string | null,
    private buf: Buffer | null,
    readonly bytes: number,
    /** The base64 as bytes: `src[from..to)`, a view of the frame it came in (never written to), or null. */
    private src: Buffer | null = null,
    private from = 0,
    private to = 0,
  ) {}

  /** Audio already checked as strict base64 whose decoded size is `bytes` (see checkBase64). */
  static ofCheckedBase64(base64: string, bytes: number): Audio {
    return new Audio(base64, null, bytes);
  }

  /** Base64 bytes `frame[from..to)` already checked as strict, decoding to `bytes` (see checkBase64Bytes); kept as a view. */
  static ofCheckedBase64Bytes(frame: Buffer, from: number, to: number, bytes: number): Audio {
    return new Audio(null, null, bytes, frame, from, to);
  }

  static ofPcm(pcm: Buffer): Audio {
    return new Audio(null, pcm, pcm.length);
  }

  /**
   * Base64 from a provider: carried as is when it is strict base64, else decoded leniently (as
   * Buffer.from does) and encoded again, so what is metered and sent on is exactly what the bytes are.
   */
  static ofProviderBase64(base64: string): Audio {
    const bytes = checkBase64(base64);
    return bytes >= 0 ? new Audio(base64, null, bytes) : Audio.ofPcm(Buffer.from(base64, 'base64'));
  }

  get base64(): string {
    if (this.b64 !== null) return this.b64;
    return (this.b64 = this.src !== null ? this.src.toString('latin1', this.from, this.to) : (this.buf as Buffer).toString('base64'));
  }

  /** Whether the audio is held as base64 (text or a frame's bytes), so writeBase64To costs no encoding. */
  get isBase64(): boolean {
    return this.buf === null;
  }

  /** The length of the base64 text (its bytes), without making it a string when it came as bytes. */
  get base64Length(): number {
    return this.src !== null ? this.to - this.from : this.base64.length;
  }

  /** Writes the base64 text into `target` at `offset` (room for `base64Length` bytes); returns the offset after it. */
  writeBase64To(target: Buffer, offset: number): number {
    if (this.src !== null) return offset + this.src.copy(target, offset, this.from, this.to);
    const s = this.base64;
    return offset + target.write(s, offset, s.length, 'latin1');
  }

  /**
   * This audio holding no view of a frame (a copy of the base64 bytes, 4/3 of the audio): for audio kept
   * after its frame's handler returns, which would otherwise keep the whole socket read alive.
   */
  owned(): Audio {
    if (this.src === null || (this.from === 0 && this.to === this.src.length)) return this;
    return new Audio(this.b64, this.buf, this.bytes, Buffer.from(this.src.subarray(this.from, this.to)), 0, this.to - this.from);
  }

  /**
   * Writes the decoded bytes into `target` at `offset` (room for `bytes` is the caller's to make), without
   * keeping a decoded copy here.
   */
  writeTo(target: Buffer, offset: number): void {
    if (this.buf) this.buf.copy(target, offset);
    // The strict check of this very text just decoded it (an append is checked, then retained): copied, not decoded again.
    else if (this.b64 !== null && this.b64 === scratchHolds) SCRATCH.copy(target, offset, 0, this.bytes);
    else target.write(this.base64, offset, this.bytes, 'base64');
  }

  get pcm(): Buffer {
    return (this.buf ??= Buffer.from(this.base64, 'base64'));
  }
}

/** Decoding target of checkBase64: one per process, reused by every frame (frames are far smaller). */
const SCRATCH = Buffer.allocUnsafe(64 * 1024);
/** The text whose decoded bytes SCRATCH holds: the last one checkBase64 decoded there and found strict. */
let scratchHolds: string | null = null;

/**
 * The decoded byte count of `s` when it is strict RFC 4648 base64 (standard alphabet, padded, padding only
 * at the end), else -1. No allocation for frames up to 48 KiB: Buffer#write decodes into a scratch buffer
 * and skips any character outside both base64 alphabets, and a skipped character always leaves fewer bytes
 * than the length and padding promise; `-` and `_` (the URL-safe alphabet, which Node also accepts) are
 * looked for apart. test/audio.test.ts checks the equivalence with the strict pattern on generated text.
 */
export function checkBase64(s: string): number {
  const n = s.length;
  if ((n & 3) !== 0) return -1;
  if (n === 0) return 0;
  const pad = s.charCodeAt(n - 1) === 61 ? (s.charCodeAt(n - 2) === 61 ? 2 : 1) : 0;
  const bytes = (n >> 2) * 3 - pad;
  const inScratch = (n >> 2) * 3 <= SCRATCH.length;
  scratchHolds = null;
  const written = inScratch ? SCRATCH.write(s, 0, 'base64') : Buffer.from(s, 'base64').length;
  if (written !== bytes || s.indexOf('-') !== -1 || s.indexOf('_') !== -1) return -1;
  if (inScratch) scratchHolds = s;
  return bytes;
}

/**
 * Whether strict base64 `s` starts with a WAV header (`RIFF` <size> `WAVE`). "RIFF" encodes as "UklGR",
 * so only such text has its first 12 bytes decoded.
 */
export function isWavHeaderBase64(s: string): boolean {
  if (!s.startsWith('UklGR') || s.length < 16) return false;
  const b = Buffer.from(s.slice(0, 16), 'base64');
  return b.length >= 12 && b[3] === 0x46 && b[8] === 0x57 && b[9] === 0x41 && b[10] === 0x56 && b[11] === 0x45;
}

/**
 * checkBase64 on bytes, without a string: the decoded byte count of `b[from..to)` when it is strict RFC 4648
 * base64 (standard alphabet, length a multiple of 4, one or two `=` only at the end), else -1. Nothing is
 * decoded: the size comes from the length and the padding.
 */
export function checkBase64Bytes(b: Buffer, from: number, to: number): number {
  const n = to - from;
  if (n < 0 || (n & 3) !== 0) return -1;
  if (n === 0) return 0;
  const pad = b[to - 1] === 61 ? (b[to - 2] === 61 ? 2 : 1) : 0;
  return isBase64Alphabet(b, from, to - pad) ? (n >> 2) * 3 - pad : -1;
}

/** isWavHeaderBase64 on strict base64 bytes `b[from..to)`: "UklGR" compared in place, decoded only then. */
export function isWavHeaderBase64Bytes(b: Buffer, from: number, to: number): boolean {
  if (to - from < 16 || b[from] !== 0x55 || b[from + 1] !== 0x6b || b[from + 2] !== 0x6c || b[from + 3] !== 0x47 || b[from + 4] !== 0x52)
    return false;
  return isWavHeaderBase64(b.toString('latin1', from, from + 16));
}
