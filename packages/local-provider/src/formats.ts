import { G711Decoder, G711Encoder, PCM16_BYTES_PER_G711_BYTE, type G711Law } from '@s2s/audio';
import type { RealtimeAudioFormats } from 'openai/resources/realtime/realtime';
import { SAMPLE_RATE_HZ } from './protocol.js';

/**
 * The audio formats the simulator takes, as OpenAI's GA Realtime does: PCM16 24 kHz, G.711 μ-law (`pcmu`) and
 * A-law (`pcma`) at 8 kHz, each direction on its own. Inside, everything is PCM16 24 kHz (the VAD, the input
 * clock, the replies); G.711 is converted at the edge, so durations stay those of PCM16 (8 bytes of G.711
 * are 48 bytes of PCM16, one millisecond).
 */
export type WireFormat = 'pcm' | G711Law;

export const PCM_FORMAT: RealtimeAudioFormats = { type: 'audio/pcm', rate: SAMPLE_RATE_HZ };

export function wireFormatOf(f: { type: 'audio/pcm' | 'audio/pcmu' | 'audio/pcma' }): WireFormat {
  return f.type === 'audio/pcmu' ? 'pcmu' : f.type === 'audio/pcma' ? 'pcma' : 'pcm';
}

export function formatObject(f: WireFormat): RealtimeAudioFormats {
  return f === 'pcm' ? PCM_FORMAT : f === 'pcmu' ? { type: 'audio/pcmu' } : { type: 'audio/pcma' };
}

/** Bytes of PCM16 24 kHz lasting as long as `bytes` of audio in `f`. */
export function pcmBytesOf(f: WireFormat, bytes: number): number {
  return f === 'pcm' ? bytes : bytes * PCM16_BYTES_PER_G711_BYTE;
}

/** One stream of client audio in `format`, as PCM16 24 kHz (stateful: the resampler's history). */
export class InputConverter {
  private decoder: G711Decoder | null;

  constructor(readonly format: WireFormat) {
    this.decoder = format === 'pcm' ? null : new G711Decoder(format);
  }

  toPcm(bytes: Buffer): Buffer {
    return this.decoder === null ? bytes : this.decoder.push(bytes);
  }
}

/** One stream of PCM16 24 kHz output, in `format` (stateful). */
export class OutputConverter {
  private encoder: G711Encoder | null;

  constructor(readonly format: WireFormat) {
    this.encoder = format === 'pcm' ? null : new G711Encoder(format);
  }

  fromPcm(pcm: Buffer): Buffer {
    return this.encoder === null ? pcm : this.encoder.push(pcm);
  }
}
