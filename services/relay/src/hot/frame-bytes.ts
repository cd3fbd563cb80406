/**
 * Outgoing hot frames (an append upstream, an audio delta to the client) written piece by piece into bytes
 * carved from a slab, instead of concatenating a string and copying it with Buffer.from: the concatenation
 * was flattened and copied again, and Buffer's 8 KiB pool was refilled every few frames. A frame handed to ws
 * may stay queued on a slow socket and keeps its slab alive, as a pooled Buffer keeps its pool: 64 KiB at
 * most per queued frame (8 KiB with Buffer's pool), the price of one slab allocation per 45 frames of 20 ms.
 */
const SLAB_BYTES = 64 * 1024;
/** Larger frames get their own Buffer (a slab serves at least four frames; 100 ms frames still fit). */
const MAX_SLAB_FRAME = SLAB_BYTES / 4;

let slab: ArrayBuffer = Buffer.allocUnsafeSlow(SLAB_BYTES).buffer;
let used = 0;

/** `length` bytes for one outgoing frame (uninitialised: the caller writes every byte). */
export function frameBuffer(length: number): Buffer {
  if (length > MAX_SLAB_FRAME) return Buffer.allocUnsafe(length);
  if (used + length > SLAB_BYTES) {
    slab = Buffer.allocUnsafeSlow(SLAB_BYTES).buffer;
    used = 0;
  }
  const out = Buffer.from(slab, used, length);
  used += (length + 7) & ~7;
  return out;
}

/** A constant piece of a frame, as bytes once (ASCII only). */
export function asciiBytes(s: string): Buffer {
  return Buffer.from(s, 'latin1');
}

/** Writes the ASCII string `s` at `at`; returns the offset after it. For short strings (ids). */
export function writeAscii(out: Buffer, at: number, s: string): number {
  for (let k = 0; k < s.length; k++) out[at++] = s.charCodeAt(k);
  return at;
}
