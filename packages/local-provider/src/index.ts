export { startLocalProvider, REALTIME_PATH } from './server.js';
export type { LocalProvider, LocalProviderOptions, ReceivedClientEvent } from './server.js';
export {
  BYTES_PER_MS,
  DEFAULT_REPLY_CHUNK_INTERVAL_MS,
  DEFAULT_SILENCE_DURATION_MS,
  DEFAULT_VOICE,
  ECHO_STREAM_MODEL,
  LOCAL_TOKEN_RATIO,
  REPLY_CHUNK_MS,
  SAMPLE_RATE_HZ,
  SEMANTIC_VAD_SILENCE_MS,
  TEXT_CHARS_PER_TOKEN,
  TEXT_DELTA_CHARS,
  TONE_HZ,
  TONE_MS_PER_CHAR,
  VAD_RMS_THRESHOLD,
  VAD_WINDOW_MS,
  localTokens,
  textTokens,
} from './protocol.js';
export { speechTranscript } from './reply.js';
export type { ClientEvent, ServerEvent } from './protocol.js';
export { pcmFrames, pcmSilence, pcmTone } from './audio.js';
