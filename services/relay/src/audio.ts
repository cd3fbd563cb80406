/**
 * One piece of PCM16LE 24 kHz mono audio on its way through the relay, held in the form it arrived in:
 * base64 text on the hot path (a client's append, an OpenAI-protocol delta), carried through to the other
 * side without being decoded and encoded again; raw bytes when a provider speaks bytes (Gemini after
 * resampling). The other form is made on first use, once. `bytes` is always the exact decoded size, the
 * figure metering counts (48 bytes = 1 ms).
 */
export class Audio {
  private constructor(
    private b64: string | null,
    private buf: Buffer | null,
    readonly bytes: number,
  ) {}

  /** Audio already checked as strict base64 whose decoded size is `bytes` (see checkBase64). */
  static ofCheckedBase64(base64: string, bytes: number): Audio {
    return new Audio(base64, null, bytes);
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
    return (this.b64 ??= (this.buf as Buffer).toString('base64'));
  }

  /** Writes the base64 text into `target` at `offset` (room for `base64.length` bytes); returns the offset after it. */
  writeBase64To(target: Buffer, offset: number): number {
    const s = this.base64;
    return offset + target.write(s, offset, s.length, 'latin1');
  }

  /**
   * Writes the decoded bytes into `target` at `offset` (room for `bytes` is the caller's to make), without
   * keeping a decoded copy here.
   */
  writeTo(target: Buffer, offset: number): void {
    if (this.buf) this.buf.copy(target, offset);
    // The strict check of this very text just decoded it (an append is checked, then retained): copied, not decoded again.
    else if (this.b64 === scratchHolds) target.set(scratchBytes(this.bytes), offset);
    else target.write(this.b64 as string, offset, 'base64');
  }

  get pcm(): Buffer {
    return (this.buf ??= Buffer.from(this.b64 as string, 'base64'));
  }
}

/** Decoding target of checkBase64: one per process, reused by every frame (frames are far smaller). */
const SCRATCH = Buffer.allocUnsafe(64 * 1024);
/** The first bytes of SCRATCH as a view, kept while frames keep their size (Buffer#copy makes one per call). */
let scratchView = SCRATCH.subarray(0, 0);
function scratchBytes(n: number): Buffer {
  if (scratchView.length !== n) scratchView = SCRATCH.subarray(0, n);
  return scratchView;
}
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
