import { randomBase62 } from '@s2s/core';
import { asciiBytes } from './frame-bytes.js';

/**
 * Server event ids: a random per-process prefix and a counter, unique without a random draw per event
 * (output deltas are the other hot path). The trick: `writeNext` writes the id next() would answer straight
 * into a frame's bytes, so an audio delta makes no id string (plain code: next(), then writing the string).
 */
export class EventIds {
  private readonly prefix = `evt_${randomBase62(10)}`;
  private readonly prefixBytes = asciiBytes(this.prefix);
  private n = 0;
  next(): string {
    return this.prefix + (this.n++).toString(36);
  }

  /** The length of the id next() would answer now. */
  nextLength(): number {
    return this.prefix.length + base36Digits(this.n);
  }

  /** Writes the id next() would answer (nextLength() bytes) at `at` and moves on, as next() does; the offset after it. */
  writeNext(out: Buffer, at: number): number {
    out.set(this.prefixBytes, at);
    let x = this.n++;
    const end = at + this.prefixBytes.length + base36Digits(x);
    for (let k = end - 1; k >= at + this.prefixBytes.length; k--) {
      out[k] = BASE36[x % 36]!;
      x = Math.floor(x / 36);
    }
    return end;
  }
}

/** Number#toString(36)'s digits, as bytes. */
const BASE36 = asciiBytes('0123456789abcdefghijklmnopqrstuvwxyz');

/** How many digits `x` (a non-negative integer) has in base 36. */
function base36Digits(x: number): number {
  let d = 1;
  while (x >= 36) {
    x = Math.floor(x / 36);
    d++;
  }
  return d;
}
