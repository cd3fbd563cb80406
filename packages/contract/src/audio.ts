import { z } from 'zod';

/** The only audio format of the public API: raw PCM16LE, 24 kHz, mono (api-v1 §2.3). */
export const AudioFormat = z.strictObject({
  type: z.literal('audio/pcm'),
  encoding: z.literal('pcm16le'),
  sample_rate_hz: z.literal(24000),
  channels: z.literal(1),
});
export type AudioFormat = z.infer<typeof AudioFormat>;

export const AUDIO_FORMAT: AudioFormat = Object.freeze({
  type: 'audio/pcm',
  encoding: 'pcm16le',
  sample_rate_hz: 24000,
  channels: 1,
});

export const AudioFormats = z.strictObject({ input: AudioFormat, output: AudioFormat });
export type AudioFormats = z.infer<typeof AudioFormats>;

/** 24 kHz * 2 bytes per sample / 1000 ms: 48 bytes of PCM16 mono make one millisecond. */
export const PCM16_BYTES_PER_MS = 48;
export const PCM16_SAMPLE_RATE_HZ = 24000;
