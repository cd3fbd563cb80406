// Pure audio helpers of the playground (no DOM): float samples at the device's rate in the Web Audio graph, a
// streaming resampler to and from the wire's rate. The wire format itself (SAMPLE_RATE, pcmSamples) is @s2s/client's.

/**
 * Streaming linear-interpolation resampler: chunks in, chunks out, continuous across chunk boundaries
 * (the last sample of a chunk is kept to interpolate into the next). Adequate for speech at 24-48 kHz.
 */
export class LinearResampler {
  private readonly step: number;
  /** Position of the next output sample, in input samples from the start of the next chunk (≥ -1). */
  private pos = 0;
  private last = 0;

  constructor(
    readonly fromRate: number,
    readonly toRate: number,
  ) {
    if (!(fromRate > 0 && toRate > 0)) throw new RangeError('sample rates must be positive');
    this.step = fromRate / toRate;
  }

  push(input: Float32Array): Float32Array {
    if (input.length === 0) return new Float32Array(0);
    const out = new Float32Array(Math.ceil((input.length - this.pos) / this.step) + 1);
    let n = 0;
    while (this.pos <= input.length - 1) {
      const i = Math.floor(this.pos);
      const frac = this.pos - i;
      const a = i < 0 ? this.last : input[i]!;
      const b = frac === 0 ? a : input[i + 1]!;
      out[n++] = a + (b - a) * frac;
      this.pos += this.step;
    }
    this.pos -= input.length;
    this.last = input[input.length - 1]!;
    return out.subarray(0, n);
  }
}

/** Float samples (-1..1, clipped) to PCM16. */
export function floatToPcm16(samples: Float32Array): Int16Array {
  const out = new Int16Array(samples.length);
  for (let i = 0; i < samples.length; i++) {
    const s = Math.max(-1, Math.min(1, samples[i]!));
    out[i] = s < 0 ? Math.round(s * 0x8000) : Math.round(s * 0x7fff);
  }
  return out;
}

export function pcm16ToFloat(samples: Int16Array): Float32Array {
  const out = new Float32Array(samples.length);
  for (let i = 0; i < samples.length; i++) out[i] = samples[i]! / 0x8000;
  return out;
}
