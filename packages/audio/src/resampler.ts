import { endianness } from 'node:os';

/**
 * A rational resampler of PCM16 mono by up/down (L/M): conceptually upsample by L (zeros between samples),
 * low-pass with a Blackman-windowed sinc, keep every M-th sample. Implemented polyphase (only the taps that
 * meet real input samples are evaluated) and stateful across chunks, so cutting a stream into chunks gives
 * exactly the samples of resampling it whole: no clicks at chunk boundaries, and no sample gained or lost.
 *
 * Duration bookkeeping: after n input samples exactly `resampledCount(n)` = floor((L·n − 1) / M) + 1 output
 * samples exist (n > 0), so a stream's output length is its input length × L / M rounded up to a whole
 * sample, however it was cut. The filter is causal: the output lags by (taps − 1) / 2 samples of the L·rate
 * domain (the figure `delayMs` gives).
 */
export interface ResamplerDesign {
  /** Interpolation factor L. */
  up: number;
  /** Decimation factor M. */
  down: number;
  /** Filter length in the L·rate domain; a multiple of `up`. */
  taps: number;
  /** Cutoff as a fraction of the L·rate domain's sample rate (below 0.5 / max(L, M)). */
  cutoff: number;
}

interface Phases {
  /** Taps of each phase p (h[p + L·t] for t = 0 …), DC gain 1 each. */
  readonly branches: readonly Float64Array[];
  /** Input samples of history a window spans. */
  readonly history: number;
}

const designs = new Map<string, Phases>();

function phasesOf(d: ResamplerDesign): Phases {
  const key = `${d.up}/${d.down}/${d.taps}/${d.cutoff}`;
  let p = designs.get(key);
  if (!p) designs.set(key, (p = design(d)));
  return p;
}

function design({ up, down, taps, cutoff }: ResamplerDesign): Phases {
  if (taps % up !== 0) throw new Error('The filter length must be a multiple of the interpolation factor.');
  const center = (taps - 1) / 2;
  const h = new Float64Array(taps);
  for (let j = 0; j < taps; j++) {
    const x = j - center;
    const sinc = x === 0 ? 2 * cutoff : Math.sin(2 * Math.PI * cutoff * x) / (Math.PI * x);
    const w = 0.42 - 0.5 * Math.cos((2 * Math.PI * j) / (taps - 1)) + 0.08 * Math.cos((4 * Math.PI * j) / (taps - 1));
    h[j] = sinc * w;
  }
  // Branch p holds h[j] for j ≡ p (mod L); normalizing each to sum 1 keeps DC exact on every output phase.
  const branches: Float64Array[] = [];
  for (let p = 0; p < up; p++) {
    const b = new Float64Array(taps / up);
    let sum = 0;
    for (let t = 0; t < b.length; t++) sum += b[t] = h[p + up * t]!;
    for (let t = 0; t < b.length; t++) b[t]! /= sum;
    branches.push(b);
  }
  // The first output a chunk completes can sit up to M input samples before the chunk: its window reaches
  // back taps / L samples from there.
  return { branches, history: Math.ceil(taps / up) + down };
}

/**
 * PCM16 24 kHz → 16 kHz (Gemini Live's input rate): 2/3 through 48 kHz, 96 taps (a ~3 kHz transition band),
 * flat to ~5.5 kHz, attenuated by the 8 kHz Nyquist, stop band (> 70 dB) from ~8.5 kHz; ≈ 1 ms of lag.
 */
export const DOWN_24K_TO_16K: Readonly<ResamplerDesign> = Object.freeze({ up: 2, down: 3, taps: 96, cutoff: 7000 / 48_000 });

export class Resampler {
  private readonly up: number;
  private readonly down: number;
  private readonly phases: Phases;
  /** The last `history` input samples, oldest first (zeros before the stream began). */
  private history: Float64Array;
  /** Input samples seen so far. */
  private inputCount = 0;
  /** Index of the next output sample. */
  private outputIndex = 0;
  private scratch = new Float64Array(0);

  constructor(readonly design: ResamplerDesign) {
    this.up = design.up;
    this.down = design.down;
    this.phases = phasesOf(design);
    this.history = new Float64Array(this.phases.history);
  }

  /** Input samples pushed so far. */
  get samplesIn(): number {
    return this.inputCount;
  }

  /** Output samples produced so far (always `resampledCount(samplesIn)`). */
  get samplesOut(): number {
    return this.outputIndex;
  }

  /** Resamples one chunk; returns the output samples it completes (possibly none). */
  push(input: Int16Array): Int16Array {
    const { up, down } = this;
    const { branches, history: HISTORY } = this.phases;
    const n = input.length;
    // Working buffer: history followed by this chunk, so every tap reads one array.
    const x = this.work(HISTORY + n);
    x.set(this.history, 0);
    for (let i = 0; i < n; i++) x[HISTORY + i] = input[i]!;
    const firstIndex = this.inputCount - HISTORY; // absolute input index of x[0]
    this.inputCount += n;

    const count = Math.max(0, resampledCount(this.inputCount, up, down) - this.outputIndex);
    const out = new Int16Array(count);
    let m = down * this.outputIndex; // position in the L·rate domain
    for (let o = 0; o < count; o++, m += down) {
      const phase = m % up;
      const taps = branches[phase]!;
      const len = taps.length;
      // y[m] = Σ_j h[j]·u[m − j], u being x upsampled by L: only j ≡ m (mod L) meets a real sample. The
      // history always covers the window (zeros before the stream began), so no index goes below 0.
      // The index is kept an integer (`| 0`: a quotient would make every load a floating-point-keyed one), and
      // the sum is unrolled by four in the same order, so every sample is the one the plain loop gives (this loop
      // is most of a phone frame's CPU: docs/benchmarks.md, "Relay: phone mode").
      let acc = 0;
      let idx = (((m - phase) / up) | 0) - firstIndex; // x index of the sample at tap t = 0
      let t = 0;
      for (; t + 4 <= len; t += 4, idx -= 4) {
        acc = acc + taps[t]! * x[idx]! + taps[t + 1]! * x[idx - 1]! + taps[t + 2]! * x[idx - 2]! + taps[t + 3]! * x[idx - 3]!;
      }
      for (; t < len; t++, idx--) acc += taps[t]! * x[idx]!;
      const v = Math.round(acc);
      out[o] = v > 32767 ? 32767 : v < -32768 ? -32768 : v;
    }
    this.outputIndex += count;
    this.history.set(x.subarray(HISTORY + n - HISTORY, HISTORY + n));
    return out;
  }

  /** A working buffer of at least `size` samples, kept between chunks of similar size. */
  private work(size: number): Float64Array {
    if (this.scratch.length < size) this.scratch = new Float64Array(size);
    return this.scratch;
  }
}

/** Output samples that exist after `inputSamples` input samples of an L/M resampler. */
export function resampledCount(inputSamples: number, up: number, down: number): number {
  return inputSamples <= 0 ? 0 : Math.floor((up * inputSamples - 1) / down) + 1;
}

/** The lag a design adds, in milliseconds, for input at `inputRateHz`. */
export function delayMs(d: ResamplerDesign, inputRateHz: number): number {
  return ((d.taps - 1) / 2 / (inputRateHz * d.up)) * 1000;
}

const LITTLE_ENDIAN = endianness() === 'LE';

/** PCM16LE bytes as samples (a view on a little-endian machine when aligned, else a copy). */
export function samplesOf(pcm: Buffer): Int16Array {
  const n = pcm.length >> 1;
  if (LITTLE_ENDIAN && (pcm.byteOffset & 1) === 0) return new Int16Array(pcm.buffer, pcm.byteOffset, n);
  const copy = new Int16Array(n);
  for (let i = 0; i < n; i++) copy[i] = pcm.readInt16LE(2 * i);
  return copy;
}

/** Samples as PCM16LE bytes (sharing their memory on a little-endian machine). */
export function bytesOf(samples: Int16Array): Buffer {
  if (LITTLE_ENDIAN) return Buffer.from(samples.buffer, samples.byteOffset, samples.byteLength);
  const out = Buffer.allocUnsafe(samples.length * 2);
  for (let i = 0; i < samples.length; i++) out.writeInt16LE(samples[i]!, 2 * i);
  return out;
}
