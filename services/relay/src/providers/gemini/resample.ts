/**
 * PCM16LE 24 kHz → 16 kHz mono, as a 2/3 rational resampler: conceptually upsample by 2 (to 48 kHz),
 * low-pass below the new 8 kHz Nyquist, keep every third sample. Implemented polyphase (only the taps that
 * meet real input samples are evaluated) and stateful across frames, so cutting a stream into frames
 * gives exactly the samples of resampling it whole: no clicks at frame boundaries.
 *
 * The filter is causal, so the output is delayed by (TAPS - 1) / 2 samples at 48 kHz (≈ 0.5 ms) and
 * after n input samples exactly floor((2n - 1) / 3) + 1 output samples exist (2/3 of the input, ± 1).
 */

/** Filter length at 48 kHz; 96 taps give a ~3 kHz transition band with a Blackman window. */
const TAPS = 96;
/** Cutoff: flat to ~5.5 kHz, attenuated by the 8 kHz Nyquist, stop band (> 70 dB) from ~8.5 kHz. */
const CUTOFF_HZ = 7000;
const RATE_48K = 48_000;
/** Input samples of history a 48 kHz window of TAPS spans. */
const HISTORY = Math.ceil(TAPS / 2) + 1;

/** The two polyphase branches: taps for even and for odd positions in the 48 kHz domain, DC gain 1 each. */
const PHASES: readonly [Float64Array, Float64Array] = designPhases();

function designPhases(): [Float64Array, Float64Array] {
  const fc = CUTOFF_HZ / RATE_48K;
  const center = (TAPS - 1) / 2;
  const h = new Float64Array(TAPS);
  for (let j = 0; j < TAPS; j++) {
    const x = j - center;
    const sinc = x === 0 ? 2 * fc : Math.sin(2 * Math.PI * fc * x) / (Math.PI * x);
    const w = 0.42 - 0.5 * Math.cos((2 * Math.PI * j) / (TAPS - 1)) + 0.08 * Math.cos((4 * Math.PI * j) / (TAPS - 1));
    h[j] = sinc * w;
  }
  // Branch p holds h[j] for j ≡ p (mod 2); normalizing each to sum 1 keeps DC exact on both output phases.
  const even = new Float64Array(TAPS / 2);
  const odd = new Float64Array(TAPS / 2);
  for (let k = 0; k < TAPS / 2; k++) {
    even[k] = h[2 * k]!;
    odd[k] = h[2 * k + 1]!;
  }
  for (const branch of [even, odd]) {
    let sum = 0;
    for (const v of branch) sum += v;
    for (let k = 0; k < branch.length; k++) branch[k]! /= sum;
  }
  return [even, odd];
}

export class Resampler24kTo16k {
  /** The last HISTORY input samples, oldest first (zeros before the stream began). */
  private history = new Float64Array(HISTORY);
  /** Input samples seen so far. */
  private inputCount = 0;
  /** Index of the next output sample. */
  private outputIndex = 0;
  /** An odd trailing byte of the previous chunk (never produced by the relay, which checks alignment). */
  private carry: number | null = null;

  /** Resamples one chunk of PCM16LE at 24 kHz; returns PCM16LE at 16 kHz (possibly empty). */
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
    const n = bytes.length / 2;
    // Working buffer: history followed by this chunk, so every tap reads one array.
    const x = new Float64Array(HISTORY + n);
    x.set(this.history, 0);
    for (let i = 0; i < n; i++) x[HISTORY + i] = bytes.readInt16LE(2 * i);
    const firstIndex = this.inputCount - HISTORY; // absolute input index of x[0]
    this.inputCount += n;

    const maxOut = Math.floor((2 * this.inputCount - 1) / 3) + 1;
    const count = Math.max(0, maxOut - this.outputIndex);
    const out = Buffer.allocUnsafe(count * 2);
    for (let o = 0; o < count; o++) {
      const m = 3 * (this.outputIndex + o); // position in the 48 kHz domain
      const parity = m & 1;
      const taps = PHASES[parity]!;
      // y[m] = Σ_j h[j]·u[m − j], u being x upsampled by 2: only j ≡ m (mod 2) meets a real sample.
      let acc = 0;
      let idx = (m - parity) / 2 - firstIndex; // x index of the sample at tap k = 0
      for (let k = 0; k < taps.length; k++, idx--) {
        if (idx >= 0) acc += taps[k]! * x[idx]!;
      }
      out.writeInt16LE(clamp16(Math.round(acc)), 2 * o);
    }
    this.outputIndex += count;
    this.history = x.slice(x.length - HISTORY);
    return out;
  }
}

function clamp16(v: number): number {
  return v > 32767 ? 32767 : v < -32768 ? -32768 : v;
}

/** Output samples that exist after `inputSamples` input samples (the count push() has produced in total). */
export function resampledLength(inputSamples: number): number {
  return inputSamples <= 0 ? 0 : Math.floor((2 * inputSamples - 1) / 3) + 1;
}
