import { BYTES_PER_MS, SAMPLE_RATE_HZ } from './protocol.js';

/**
 * PCM16LE 24 kHz mono test signals. A tone at the default amplitude is speech to the simulator's VAD
 * (RMS ≈ 5657, threshold 500); silence is not. Deterministic: same arguments, same bytes.
 */
export function pcmTone(ms: number, opts: { frequencyHz?: number; amplitude?: number; phaseSamples?: number } = {}): Buffer {
  const frequency = opts.frequencyHz ?? 440;
  const amplitude = opts.amplitude ?? 8000;
  const offset = opts.phaseSamples ?? 0;
  const samples = Math.round((ms * BYTES_PER_MS) / 2);
  const out = Buffer.alloc(samples * 2);
  for (let i = 0; i < samples; i++) {
    out.writeInt16LE(Math.round(amplitude * Math.sin((2 * Math.PI * frequency * (i + offset)) / SAMPLE_RATE_HZ)), 2 * i);
  }
  return out;
}

export function pcmSilence(ms: number): Buffer {
  return Buffer.alloc(Math.round(ms * BYTES_PER_MS));
}

/** Cuts PCM into frames of `frameMs` (the last one may be shorter). */
export function pcmFrames(pcm: Buffer, frameMs = 20): Buffer[] {
  const size = frameMs * BYTES_PER_MS;
  const frames: Buffer[] = [];
  for (let off = 0; off < pcm.length; off += size) frames.push(pcm.subarray(off, off + size));
  return frames;
}
