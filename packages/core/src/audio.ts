import { AUDIO_FORMAT } from '@s2s/contract';

/** The public audio format's figures (api-v1 §2.3): raw PCM16LE, 24 kHz, mono. */
export const SAMPLE_RATE_HZ = AUDIO_FORMAT.sample_rate_hz;
export const BYTES_PER_SAMPLE = 2;

/** 24 kHz * 2 bytes per sample / 1000 ms: 48 bytes of PCM16 mono make one millisecond (decisions.md). */
export const BYTES_PER_MS = (SAMPLE_RATE_HZ * BYTES_PER_SAMPLE) / 1000;

/** Whole milliseconds of audio in `bytes` (what metering counts: a partial millisecond is not one yet). */
export function pcmMs(bytes: number): number {
  return Math.floor(bytes / BYTES_PER_MS);
}

/** Milliseconds of audio in `bytes`, a partial millisecond counted as one (budget look-ahead). */
export function pcmMsCeil(bytes: number): number {
  return Math.ceil(bytes / BYTES_PER_MS);
}

/** Bytes of PCM16 mono audio in `ms` milliseconds. */
export function pcmBytes(ms: number): number {
  return Math.round(ms * BYTES_PER_MS);
}
