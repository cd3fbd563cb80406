import { AUDIO_FORMAT } from '@s2s/contract';

/** The gateway's only audio format: PCM16LE, 24 kHz, mono (api-v1 §2.3). */
export const SAMPLE_RATE = AUDIO_FORMAT.sample_rate_hz;
/** 24000 samples/s × 2 bytes / 1000. */
export const BYTES_PER_MS = (SAMPLE_RATE * 2) / 1000;
/** Frame length of {@link chunkPcm} unless told: 20 ms, 960 bytes. */
export const DEFAULT_FRAME_MS = 20;

/** PCM as a caller may hold it: samples (Int16Array), bytes (Uint8Array, Node's Buffer) or an ArrayBuffer. */
export type PcmInput = Int16Array | Uint8Array | ArrayBuffer;

interface NodeBuffer {
  from(data: ArrayBufferLike, byteOffset: number, length: number): { toString(encoding: 'base64'): string };
  from(data: string, encoding: 'base64'): Uint8Array;
}
/** Node's Buffer when present (fast), else the browser's atob/btoa. */
const NodeBuffer = (globalThis as { Buffer?: NodeBuffer }).Buffer;

/** Raw little-endian bytes of `pcm`, without a copy (Int16Array is little-endian on every platform JS runs on). */
export function pcmBytes(pcm: PcmInput): Uint8Array {
  if (pcm instanceof Uint8Array) return pcm;
  if (pcm instanceof Int16Array) return new Uint8Array(pcm.buffer, pcm.byteOffset, pcm.byteLength);
  return new Uint8Array(pcm);
}

/** Samples of raw PCM16LE bytes (copied when `bytes` is not 2-byte aligned in its buffer). */
export function pcmSamples(bytes: Uint8Array): Int16Array {
  const even = bytes.byteLength - (bytes.byteLength % 2);
  if (bytes.byteOffset % 2 === 0) return new Int16Array(bytes.buffer, bytes.byteOffset, even / 2);
  return new Int16Array(bytes.slice(0, even).buffer);
}

/** Milliseconds of 24 kHz mono PCM16 in `bytes` bytes (48 bytes = 1 ms). */
export function pcmDurationMs(bytes: number): number {
  return bytes / BYTES_PER_MS;
}

export function toBase64(bytes: Uint8Array): string {
  if (NodeBuffer) return NodeBuffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('base64');
  return btoaBase64(bytes);
}

export function fromBase64(text: string): Uint8Array {
  return NodeBuffer ? NodeBuffer.from(text, 'base64') : atobBase64(text);
}

/** The browser path of toBase64 (exported for its test). */
export function btoaBase64(bytes: Uint8Array): string {
  let binary = '';
  for (let i = 0; i < bytes.length; i += 0x8000) binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(binary);
}

/** The browser path of fromBase64 (exported for its test). */
export function atobBase64(text: string): Uint8Array {
  const binary = atob(text);
  const out = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) out[i] = binary.charCodeAt(i);
  return out;
}

/**
 * `pcm` cut into frames of `frameMs` (the last one shorter, still whole samples). The gateway refuses an odd
 * byte count, so an odd-length input is refused here rather than half a sample sent.
 */
export function chunkPcm(pcm: PcmInput, frameMs: number = DEFAULT_FRAME_MS): Uint8Array[] {
  const bytes = pcmBytes(pcm);
  if (bytes.byteLength % 2 !== 0) throw new RangeError(`PCM16 needs whole samples: ${bytes.byteLength} bytes is odd`);
  if (!Number.isInteger(frameMs) || frameMs < 1) throw new RangeError(`frameMs must be a positive integer, not ${frameMs}`);
  const frameBytes = frameMs * BYTES_PER_MS;
  const frames: Uint8Array[] = [];
  for (let off = 0; off < bytes.byteLength; off += frameBytes) frames.push(bytes.subarray(off, off + frameBytes));
  return frames;
}

/** `input_audio_buffer.append` events carrying `pcm` in frames of `frameMs`. */
export function audioAppendEvents(pcm: PcmInput, frameMs: number = DEFAULT_FRAME_MS) {
  return chunkPcm(pcm, frameMs).map((frame) => ({ type: 'input_audio_buffer.append' as const, audio: toBase64(frame) }));
}

// ---- WAV (RIFF, 16-bit PCM) ----

export interface WavAudio {
  sampleRate: number;
  channels: number;
  /** Interleaved PCM16LE bytes. */
  pcm: Uint8Array;
}

const ascii = (b: Uint8Array, at: number, n: number) => String.fromCharCode(...b.subarray(at, at + n));

/** Reads a 16-bit PCM WAV file (any rate and channel count). */
export function decodeWav(file: Uint8Array): WavAudio {
  const view = new DataView(file.buffer, file.byteOffset, file.byteLength);
  if (file.byteLength < 12 || ascii(file, 0, 4) !== 'RIFF' || ascii(file, 8, 4) !== 'WAVE')
    throw new Error('not a WAV file (no RIFF/WAVE header)');
  let fmt: { format: number; channels: number; rate: number; bits: number } | null = null;
  let data: Uint8Array | null = null;
  for (let off = 12; off + 8 <= file.byteLength;) {
    const id = ascii(file, off, 4);
    const size = view.getUint32(off + 4, true);
    const body = file.subarray(off + 8, Math.min(file.byteLength, off + 8 + size));
    if (id === 'fmt ' && body.byteLength >= 16) {
      const b = new DataView(body.buffer, body.byteOffset, body.byteLength);
      fmt = { format: b.getUint16(0, true), channels: b.getUint16(2, true), rate: b.getUint32(4, true), bits: b.getUint16(14, true) };
    }
    if (id === 'data') data = body;
    off += 8 + size + (size & 1);
  }
  if (!fmt || !data) throw new Error('WAV file without a fmt or data chunk');
  // 0xfffe is WAVE_FORMAT_EXTENSIBLE, what sox writes for PCM too.
  if ((fmt.format !== 1 && fmt.format !== 0xfffe) || fmt.bits !== 16) {
    throw new Error(`WAV must be 16-bit PCM (format ${fmt.format}, ${fmt.bits} bits)`);
  }
  if (fmt.channels < 1 || fmt.rate < 1) throw new Error(`WAV with ${fmt.channels} channels at ${fmt.rate} Hz`);
  const frameBytes = 2 * fmt.channels;
  return { sampleRate: fmt.rate, channels: fmt.channels, pcm: data.subarray(0, data.byteLength - (data.byteLength % frameBytes)) };
}

/** Any PCM16 audio as the gateway takes it: channels averaged, then resampled linearly to 24 kHz. */
export function toGatewayPcm(audio: WavAudio): Uint8Array {
  const { sampleRate, channels } = audio;
  const src = pcmSamples(audio.pcm);
  const frames = Math.floor(src.length / channels);
  if (sampleRate === SAMPLE_RATE && channels === 1) return pcmBytes(src.slice(0, frames));
  const mono = new Float64Array(frames);
  for (let i = 0; i < frames; i++) {
    let sum = 0;
    for (let c = 0; c < channels; c++) sum += src[i * channels + c] as number;
    mono[i] = sum / channels;
  }
  const outFrames = Math.floor((frames * SAMPLE_RATE) / sampleRate);
  const out = new Int16Array(outFrames);
  for (let i = 0; i < outFrames; i++) {
    const pos = (i * sampleRate) / SAMPLE_RATE;
    const i0 = Math.floor(pos);
    const a = mono[i0] ?? 0;
    const b = mono[i0 + 1] ?? a;
    out[i] = Math.max(-32768, Math.min(32767, Math.round(a + (b - a) * (pos - i0))));
  }
  return pcmBytes(out);
}

/** A WAV file of PCM16LE bytes (mono, 24 kHz unless told). */
export function encodeWav(pcm: PcmInput, opts: { sampleRate?: number; channels?: number } = {}): Uint8Array {
  const bytes = pcmBytes(pcm);
  const sampleRate = opts.sampleRate ?? SAMPLE_RATE;
  const channels = opts.channels ?? 1;
  const out = new Uint8Array(44 + bytes.byteLength);
  const v = new DataView(out.buffer);
  const put = (at: number, s: string) => {
    for (let i = 0; i < s.length; i++) out[at + i] = s.charCodeAt(i);
  };
  put(0, 'RIFF');
  v.setUint32(4, 36 + bytes.byteLength, true);
  put(8, 'WAVEfmt ');
  v.setUint32(16, 16, true);
  v.setUint16(20, 1, true);
  v.setUint16(22, channels, true);
  v.setUint32(24, sampleRate, true);
  v.setUint32(28, sampleRate * channels * 2, true);
  v.setUint16(32, channels * 2, true);
  v.setUint16(34, 16, true);
  put(36, 'data');
  v.setUint32(40, bytes.byteLength, true);
  out.set(bytes, 44);
  return out;
}
