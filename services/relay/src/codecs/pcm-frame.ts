import { Audio, checkBase64, isWavHeaderBase64 } from '../audio.js';
import { FlatMemo, FlatShape } from '../hot/flat-json.js';

/** Why an `input_audio_buffer.append` frame is not raw aligned PCM16LE (all answer `invalid_audio_format`). */
export type AudioFrameProblem = 'not_base64' | 'empty' | 'odd_length' | 'wav_header';

export const AUDIO_FRAME_MESSAGES: Readonly<Record<AudioFrameProblem, string>> = {
  not_base64: 'The audio is not valid base64.',
  empty: 'The audio frame is empty.',
  odd_length: 'The audio must be raw PCM16LE: its byte count must be even.',
  wav_header: 'The audio must be raw PCM16LE without a WAV header.',
};

/**
 * Checks one frame's base64 is raw aligned PCM16LE without keeping its bytes: strict base64 and the byte
 * count from the length and padding (checkBase64), the WAV header from the first characters. The Audio
 * carries the client's text on to the provider; every dialect's append takes this path.
 */
export function decodePcmFrame(audio: string): Audio | AudioFrameProblem {
  if (audio.length === 0) return 'empty';
  const bytes = checkBase64(audio);
  if (bytes < 0) return 'not_base64';
  if (bytes === 0) return 'empty';
  if ((bytes & 1) !== 0) return 'odd_length';
  if (isWavHeaderBase64(audio)) return 'wav_header';
  return Audio.ofCheckedBase64(audio, bytes);
}

const APPEND = new FlatShape(['type', 'event_id', 'audio'], 2, true, { 0: ['input_audio_buffer.append'] });
const appendSlots: (string | number | undefined)[] = [];
/** One for every client of the process: clients of one kind send the same bytes before the audio. */
const appendMemo = new FlatMemo();

/**
 * The append fast path of every dialect: a compact `input_audio_buffer.append` (type, audio, optional
 * string event_id, nothing else) whose audio passes decodePcmFrame, read without JSON.parse. null for
 * anything else, which the codec parses whole (refusals included), so both paths agree on every frame.
 */
export function readCompactAppend(data: Buffer): { eventId: string | undefined; audio: Audio } | null {
  if (!APPEND.read(data, appendSlots, appendMemo)) return null;
  const [type, eventId, audio] = appendSlots;
  if (type !== 'input_audio_buffer.append' || typeof audio !== 'string' || typeof eventId === 'number') return null;
  const checked = decodePcmFrame(audio);
  return typeof checked === 'string' ? null : { eventId, audio: checked };
}
