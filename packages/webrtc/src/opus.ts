import OpusScript from 'opusscript';

/** The gateway's PCM: 16-bit little-endian mono at 24 kHz, which libopus encodes and decodes natively. */
export const PCM_RATE_HZ = 24_000;
/** One Opus packet carries 20 ms: 480 samples at 24 kHz, 960 bytes of PCM16. */
export const FRAME_MS = 20;
export const FRAME_SAMPLES = (PCM_RATE_HZ * FRAME_MS) / 1000;
export const FRAME_BYTES = FRAME_SAMPLES * 2;
/** Opus's RTP clock is always 48 kHz (RFC 7587): a 20 ms packet advances the timestamp by 960. */
export const RTP_TICKS_PER_FRAME = (48_000 * FRAME_MS) / 1000;

/** libopus (WebAssembly, opusscript) decoding a call's input to PCM16 24 kHz; free it with `close()`. */
export class OpusDecoder {
  private codec: OpusScript | undefined = new OpusScript(PCM_RATE_HZ, 1, OpusScript.Application.VOIP);

  /** PCM16 24 kHz of one Opus packet, or undefined for a packet libopus refuses. */
  decode(packet: Buffer): Buffer | undefined {
    if (this.codec === undefined || packet.length === 0) return undefined;
    try {
      return Buffer.from(this.codec.decode(packet));
    } catch {
      return undefined;
    }
  }

  close(): void {
    this.codec?.delete();
    this.codec = undefined;
  }
}

/** libopus encoding the provider's PCM16 24 kHz in 20 ms packets; free it with `close()`. */
export class OpusEncoder {
  private codec: OpusScript | undefined = new OpusScript(PCM_RATE_HZ, 1, OpusScript.Application.VOIP);

  /** One packet from exactly FRAME_BYTES of PCM16. */
  encode(frame: Buffer): Buffer {
    if (this.codec === undefined) throw new Error('encoder closed');
    return Buffer.from(this.codec.encode(frame, FRAME_SAMPLES));
  }

  close(): void {
    this.codec?.delete();
    this.codec = undefined;
  }
}
