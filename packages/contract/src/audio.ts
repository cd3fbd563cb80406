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
