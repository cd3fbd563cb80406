/** Why an `input_audio_buffer.append` frame is not raw aligned PCM16LE (all answer `invalid_audio_format`). */
export type AudioFrameProblem = 'not_base64' | 'empty' | 'odd_length' | 'wav_header';

export const AUDIO_FRAME_MESSAGES: Readonly<Record<AudioFrameProblem, string>> = {
  not_base64: 'The audio is not valid base64.',
  empty: 'The audio frame is empty.',
  odd_length: 'The audio must be raw PCM16LE: its byte count must be even.',
  wav_header: 'The audio must be raw PCM16LE without a WAV header.',
};

/**
 * Decodes one frame's base64 and checks it is raw aligned PCM16LE. Buffer.from skips characters that are
 * not base64 and accepts the URL-safe alphabet; a skipped character always leaves fewer bytes than the
 * length and padding promise, so the strict check is that count plus no `-`/`_` (test/domain.test.ts
 * proves it equal to the strict RFC 4648 pattern) at the cost of two scans, not a second encoding.
 */
export function decodePcmFrame(audio: string): Buffer | AudioFrameProblem {
  const n = audio.length;
  if (n === 0) return 'empty';
  if ((n & 3) !== 0) return 'not_base64';
  const pad = audio.charCodeAt(n - 1) === 61 ? (audio.charCodeAt(n - 2) === 61 ? 2 : 1) : 0;
  const pcm = Buffer.from(audio, 'base64');
  if (pcm.length !== (n >> 2) * 3 - pad || audio.indexOf('-') !== -1 || audio.indexOf('_') !== -1) return 'not_base64';
  if (pcm.length === 0) return 'empty';
  if ((pcm.length & 1) !== 0) return 'odd_length';
  if (isWavHeader(pcm)) return 'wav_header';
  return pcm;
}

/** `RIFF` <size> `WAVE`: the start of a WAV file. */
function isWavHeader(b: Buffer): boolean {
  return (
    b.length >= 12 &&
    b[0] === 0x52 &&
    b[1] === 0x49 &&
    b[2] === 0x46 &&
    b[3] === 0x46 &&
    b[8] === 0x57 &&
    b[9] === 0x41 &&
    b[10] === 0x56 &&
    b[11] === 0x45
  );
}
