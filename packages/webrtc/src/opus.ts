import OpusScript from 'opusscript';

/** The gateway's PCM: 16-bit little-endian mono at 24 kHz, which libopus encodes and decodes natively. */
export const PCM_RATE_HZ = 24_000;
/** One Opus packet carries 20 ms: 480 samples at 24 kHz, 960 bytes of PCM16. */
export const FRAME_MS = 20;
export const FRAME_SAMPLES = (PCM_RATE_HZ * FRAME_MS) / 1000;
export const FRAME_BYTES = FRAME_SAMPLES * 2;
/** Opus's RTP clock is always 48 kHz (RFC 7587): a 20 ms packet advances the timestamp by 960. */
export const RTP_TICKS_PER_FRAME = (48_000 * FRAME_MS) / 1000;

/** The fields of an opusscript 0.1.1 instance that `withPcmViewsInPlace` corrects. */
interface OpusScriptViews {
  inPCMPointer: number;
  inPCMLength: number;
  outPCMPointer: number;
  outPCMLength: number;
  inPCM: Uint16Array;
  outPCM: Uint16Array;
  inOpus: Uint8Array;
}

/**
 * opusscript 0.1.1 makes its PCM views with `HEAPU16.subarray(pointer, ...)`, an element index given a byte
 * address: encode and decode then read and write at twice the address malloc gave, in memory that belongs to
 * whatever the shared WebAssembly heap put there. With one coder that memory is mostly unused; with several calls
 * at once it holds other coders' state, and the heap breaks ("memory access out of bounds" in the next
 * `new OpusScript`, a 500 for the next call's offer). The views are made again over the memory malloc gave.
 */
export function withPcmViewsInPlace(codec: OpusScript): OpusScript {
  const c = codec as unknown as OpusScriptViews;
  if (typeof c.inPCMPointer !== 'number' || typeof c.outPCMPointer !== 'number' || !(c.inOpus instanceof Uint8Array)) {
    throw new Error('opusscript internals changed: check its PCM views (inPCM, outPCM) before upgrading');
  }
  const heap = c.inOpus.buffer;
  c.inPCM = new Uint16Array(heap, c.inPCMPointer, c.inPCMLength / 2);
  c.outPCM = new Uint16Array(heap, c.outPCMPointer, c.outPCMLength / 2);
  return codec;
}

function newCodec(): OpusScript {
  return withPcmViewsInPlace(new OpusScript(PCM_RATE_HZ, 1, OpusScript.Application.VOIP));
}

/** libopus (WebAssembly, opusscript) decoding a call's input to PCM16 24 kHz; free it with `close()`. */
export class OpusDecoder {
  private codec: OpusScript | undefined = newCodec();

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
  private codec: OpusScript | undefined = newCodec();

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
