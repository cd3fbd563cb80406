import alawmulaw from 'alawmulaw';
import { bytesOf, Resampler, samplesOf, type ResamplerDesign } from './resampler.js';

/**
 * G.711 (μ-law `pcmu`, A-law `pcma`; 8 kHz mono, one byte a sample) to and from the gateway's PCM16LE at
 * 24 kHz, for the relay's one converter (FormatConverter: where a client's format is not its provider's;
 * decisions.md, "Phone audio"). The companding is `alawmulaw`'s (ITU-T G.711); the rate change is the
 * rational resampler, stateful per stream.
 *
 * Durations stay exact: n bytes of G.711 are n / 8 ms and decode to exactly 3n samples at 24 kHz (6n bytes,
 * the same n / 8 ms); n samples at 24 kHz encode to ceil(n / 3) bytes over the whole stream, however it is cut.
 */
export type G711Law = 'pcmu' | 'pcma';

export const G711_SAMPLE_RATE_HZ = 8000;
/** One byte a sample at 8 kHz: 8 bytes make a millisecond. */
export const G711_BYTES_PER_MS = 8;
/** One byte of G.711 (1/8 ms) lasts as long as 6 bytes of PCM16LE 24 kHz (48 bytes a millisecond). */
export const PCM16_BYTES_PER_G711_BYTE = 6;
/** A telephony frame: 20 ms, 160 bytes. */
export const G711_FRAME_MS = 20;
export const G711_FRAME_BYTES = G711_FRAME_MS * G711_BYTES_PER_MS;

/**
 * The telephone band ends at 3.4 kHz; the filter passes it and stops before 8 kHz's Nyquist (4 kHz), so the
 * 24 → 8 kHz direction does not alias. 96 taps at 24 kHz: a transition of about 1.4 kHz and a lag of 2 ms.
 */
const CUTOFF = 3400 / 24_000;
const TAPS = 96;
export const UP_8K_TO_24K: Readonly<ResamplerDesign> = Object.freeze({ up: 3, down: 1, taps: TAPS, cutoff: CUTOFF });
export const DOWN_24K_TO_8K: Readonly<ResamplerDesign> = Object.freeze({ up: 1, down: 3, taps: TAPS, cutoff: CUTOFF });

const { alaw, mulaw } = alawmulaw;

/** Companded bytes as linear samples (8 kHz). */
export function decodeG711(law: G711Law, bytes: Uint8Array): Int16Array {
  return law === 'pcmu' ? mulaw.decode(bytes) : alaw.decode(bytes);
}

/** Linear samples (8 kHz) as companded bytes. */
export function encodeG711(law: G711Law, samples: Int16Array): Uint8Array {
  return law === 'pcmu' ? mulaw.encode(samples) : alaw.encode(samples);
}

/** Whole milliseconds in `bytes` of G.711. */
export function g711Ms(bytes: number): number {
  return Math.floor(bytes / G711_BYTES_PER_MS);
}

/** One stream of G.711 in, PCM16LE 24 kHz out (the caller's audio on its way to a provider). */
export class G711Decoder {
  private readonly resampler = new Resampler(UP_8K_TO_24K);

  constructor(readonly law: G711Law) {}

  /** Exactly 6 bytes of PCM16LE 24 kHz for every byte in. */
  push(g711: Uint8Array): Buffer {
    return bytesOf(this.resampler.push(decodeG711(this.law, g711)));
  }
}

/** One stream of PCM16LE 24 kHz in, G.711 out (a provider's audio on its way to a phone). */
export class G711Encoder {
  private readonly resampler = new Resampler(DOWN_24K_TO_8K);
  /** An odd trailing byte of the previous chunk (providers send whole samples; kept so none is lost). */
  private carry: number | null = null;

  constructor(readonly law: G711Law) {}

  /** The G.711 bytes this chunk completes (ceil(samples / 3) over the stream). */
  push(pcm: Buffer): Buffer {
    let bytes = pcm;
    if (this.carry !== null) {
      bytes = Buffer.concat([Buffer.from([this.carry]), pcm]);
      this.carry = null;
    }
    if (bytes.length % 2 === 1) {
      this.carry = bytes[bytes.length - 1]!;
      bytes = bytes.subarray(0, bytes.length - 1);
    }
    const encoded = encodeG711(this.law, this.resampler.push(samplesOf(bytes)));
    return Buffer.from(encoded.buffer, encoded.byteOffset, encoded.byteLength);
  }
}
