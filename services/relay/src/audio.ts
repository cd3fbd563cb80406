import { decodeG711, encodeG711, G711Decoder, G711Encoder, PCM16_BYTES_PER_G711_BYTE } from '@s2s/audio';

/**
 * The formats audio crosses the relay in: PCM16LE 24 kHz mono, or G.711 μ-law / A-law 8 kHz mono (decisions.md,
 * "Phone audio"). A client speaks one (its dialect's, or the OpenAI dialect's session formats), an upstream
 * connection another or the same (the formats its provider takes: `ProviderCapabilities.audioFormats`).
 */
export type AudioFormat = 'pcm16' | 'pcmu' | 'pcma';

/** Bytes of PCM16 24 kHz lasting as long as `bytes` of `format`. */
export function pcm16BytesOf(format: AudioFormat, bytes: number): number {
  return format === 'pcm16' ? bytes : bytes * PCM16_BYTES_PER_G711_BYTE;
}

/** Bytes of `format` lasting as long as `pcm16Bytes` of PCM16 24 kHz, rounded down. */
export function bytesOfPcm16(format: AudioFormat, pcm16Bytes: number): number {
  return format === 'pcm16' ? pcm16Bytes : Math.floor(pcm16Bytes / PCM16_BYTES_PER_G711_BYTE);
}

/**
 * One piece of audio on its way through the relay, in its `format`, held in the form it arrived in: base64
 * text on the hot path (a client's append, an OpenAI-protocol delta, a phone stream's media payload),
 * carried through to the other side without being decoded and encoded again when both sides speak the
 * format; raw bytes when a provider speaks bytes (Gemini after resampling) or after a conversion. The other
 * form is made on first use, once. `bytes` is always the exact decoded size; `pcm16Bytes` its duration as
 * PCM16 24 kHz bytes, the figure metering, budgets and played positions count (48 bytes = 1 ms), whatever the
 * format.
 */
export class Audio {
  private constructor(
    private b64: string | null,
    private buf: Buffer | null,
    readonly bytes: number,
    readonly format: AudioFormat,
  ) {}

  /** Audio already checked as strict base64 whose decoded size is `bytes` (see checkBase64). */
  static ofCheckedBase64(base64: string, bytes: number, format: AudioFormat = 'pcm16'): Audio {
    return new Audio(base64, null, bytes, format);
  }

  static ofPcm(pcm: Buffer): Audio {
    return new Audio(null, pcm, pcm.length, 'pcm16');
  }

  /** Raw bytes in `format`. */
  static of(format: AudioFormat, bytes: Buffer): Audio {
    return new Audio(null, bytes, bytes.length, format);
  }

  /**
   * Base64 from a provider: carried as is when it is strict base64, else decoded leniently (as
   * Buffer.from does) and encoded again, so what is metered and sent on is exactly what the bytes are.
   */
  static ofProviderBase64(base64: string, format: AudioFormat = 'pcm16'): Audio {
    const bytes = checkBase64(base64);
    return bytes >= 0 ? new Audio(base64, null, bytes, format) : Audio.of(format, Buffer.from(base64, 'base64'));
  }

  /** The duration as bytes of PCM16 24 kHz (48 = 1 ms): what is metered, whatever the format. */
  get pcm16Bytes(): number {
    return pcm16BytesOf(this.format, this.bytes);
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

  /** The decoded bytes, in `format` (PCM16 samples, or G.711 bytes). */
  get pcm(): Buffer {
    return (this.buf ??= Buffer.from(this.b64 as string, 'base64'));
  }
}

/**
 * The one place audio changes format in the relay (decisions.md, "Phone audio"): one direction of one stream
 * (a client's input on its way to an upstream connection, or an upstream's output on its way to a client),
 * stateful as the rate change is. Audio already in the wanted format passes as it is, base64 untouched; G.711
 * to PCM16 is decoded and resampled 8 → 24 kHz, PCM16 to G.711 resampled 24 → 8 kHz and encoded, μ-law to
 * A-law and back recoded sample for sample. Durations are exact: n bytes of G.711 become exactly 6n of PCM16;
 * PCM16 becomes ceil(samples / 3) bytes over the stream, however it is cut (a piece of under 3 samples makes an
 * empty one, its samples carried).
 */
export class FormatConverter {
  private decoder: G711Decoder | null = null;
  private encoder: G711Encoder | null = null;

  to(audio: Audio, format: AudioFormat): Audio {
    const from = audio.format;
    if (from === format) return audio;
    if (format === 'pcm16') {
      if (from === 'pcm16') return audio;
      if (this.decoder?.law !== from) this.decoder = new G711Decoder(from);
      return Audio.ofPcm(this.decoder.push(audio.pcm));
    }
    if (from === 'pcm16') {
      if (this.encoder?.law !== format) this.encoder = new G711Encoder(format);
      return Audio.of(format, this.encoder.push(audio.pcm));
    }
    const recoded = encodeG711(format, decodeG711(from, audio.pcm));
    return Audio.of(format, Buffer.from(recoded.buffer, recoded.byteOffset, recoded.byteLength));
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
