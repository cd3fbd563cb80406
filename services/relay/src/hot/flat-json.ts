/**
 * Reads the hot events (an append in, an audio delta out) straight from a frame's bytes, without
 * JSON.parse: only a compact flat object (`{"k":"v","n":0}`: no whitespace, string members without escapes,
 * control or non-ASCII bytes, non-negative integer members). Anything else answers false and the caller
 * parses the frame with JSON.parse as before, so every accepted frame reads exactly as JSON.parse reads it.
 */
export class FlatShape {
  private readonly keys: Buffer[];
  private readonly consts: (readonly string[] | undefined)[];

  /**
   * `keys`: the members read, in result order; others are skipped when simple. `long`: the index of the
   * one member that may be long (base64); its bytes are not checked here: the caller checks it strictly
   * (escapes, control and non-ASCII bytes are never base64) and parses the frame again if it fails.
   * `closed`: a member not in `keys` answers false (the event's schema refuses unknown members).
   * `consts`: per key, the values expected (an event's `type`): one that matches is answered as that very
   * string, with no string made per frame.
   */
  constructor(
    keys: readonly string[],
    private readonly long: number,
    private readonly closed = false,
    consts: Readonly<Record<number, readonly string[]>> = {},
  ) {
    this.keys = keys.map((k) => Buffer.from(k, 'latin1'));
    this.consts = keys.map((_, k) => consts[k]);
  }

  /**
   * Fills `out` (one slot per key, undefined when absent); false when the frame is not such an object.
   * `memo` (one per source of frames, e.g. per connection): what its previous frames had (see FlatMemo).
   */
  read(buf: Buffer, out: (string | number | undefined)[], memo?: FlatMemo): boolean {
    const n = buf.length;
    for (let k = 0; k < this.keys.length; k++) out[k] = undefined;
    if (n < 2 || buf[0] !== 0x7b || buf[n - 1] !== 0x7d) return false;
    let i = 1;
    if (n === 2) return true;
    if (memo !== undefined && memo.headLength > 0 && memo.headLength < n && memo.sameHead(buf)) {
      // The same bytes up to the long value as a frame read before: the scan is where it was then.
      for (let k = 0; k < this.keys.length; k++) out[k] = memo.headSlots[k];
      i = this.longValue(buf, memo.headLength, out);
      if (i < 0) return false;
      if (buf[i] !== 0x2c) return i === n - 1;
      i++;
    }
    for (;;) {
      if (buf[i] !== 0x22) return false;
      const keyEnd = plainEnd(buf, i + 1);
      if (keyEnd < 0 || buf[keyEnd + 1] !== 0x3a) return false;
      const slot = this.slotOf(buf, i + 1, keyEnd);
      if (slot < 0 && this.closed) return false;
      if (slot >= 0 && out[slot] !== undefined) return false; // a repeated member: JSON.parse keeps the last
      let v = keyEnd + 2;
      if (buf[v] === 0x22) {
        if (slot === this.long) {
          memo?.noteHead(buf, v + 1, out);
          i = this.longValue(buf, v + 1, out);
          if (i < 0) return false;
        } else {
          const end = plainEnd(buf, v + 1);
          if (end < 0) return false;
          if (slot >= 0) out[slot] = this.text(buf, v + 1, end, slot, memo?.values);
          i = end + 1;
        }
      } else {
        // A non-negative integer without a leading zero, small enough to be exact.
        let x = 0;
        const start = v;
        while (v < n && buf[v]! >= 0x30 && buf[v]! <= 0x39) x = x * 10 + (buf[v++]! - 0x30);
        const digits = v - start;
        if (digits === 0 || digits > 15 || (digits > 1 && buf[start] === 0x30)) return false;
        if (slot >= 0) out[slot] = x;
        i = v;
      }
      if (buf[i] === 0x2c) {
        i++;
        continue;
      }
      return i === n - 1;
    }
  }

  /** The long member's string value starting at `start` (after its quote): the offset after its closing quote, or -1. */
  private longValue(buf: Buffer, start: number, out: (string | number | undefined)[]): number {
    const end = buf.indexOf(0x22, start);
    if (end < 0) return -1;
    out[this.long] = buf.toString('latin1', start, end);
    return end + 1;
  }

  /** A short string member: a known constant, the memo's previous value, or a new string. */
  private text(buf: Buffer, start: number, end: number, slot: number, memo: (string | number | undefined)[] | undefined): string {
    const consts = this.consts[slot];
    if (consts !== undefined) for (const c of consts) if (sameText(buf, start, end, c)) return c;
    const prev = memo?.[slot];
    if (typeof prev === 'string' && sameText(buf, start, end, prev)) return prev;
    const s = buf.toString('latin1', start, end);
    if (memo !== undefined) memo[slot] = s;
    return s;
  }

  private slotOf(buf: Buffer, start: number, end: number): number {
    const len = end - start;
    for (let k = 0; k < this.keys.length; k++) {
      const key = this.keys[k]!;
      if (key.length !== len) continue;
      let j = 0;
      while (j < len && key[j] === buf[start + j]) j++;
      if (j === len) return k;
    }
    return -1;
  }
}

/** Whether bytes `start`..`end` of `buf` are the (ASCII) string `s`. */
function sameText(buf: Buffer, start: number, end: number, s: string): boolean {
  if (end - start !== s.length) return false;
  for (let j = 0; j < s.length; j++) if (buf[start + j] !== s.charCodeAt(j)) return false;
  return true;
}

/**
 * The closing quote of a string starting at `start` whose bytes read as themselves (printable ASCII, no
 * `\`), or -1.
 */
function plainEnd(buf: Buffer, start: number): number {
  for (let j = start; j < buf.length; j++) {
    const c = buf[j]!;
    if (c === 0x22) return j;
    if (c < 0x20 || c > 0x7e || c === 0x5c) return -1;
  }
  return -1;
}

/** Bytes of a head kept (longer heads are not memoized). */
const MAX_HEAD = 256;

/**
 * What FlatShape.read keeps of one source's frames: the string values of its previous frame (reused when the
 * same bytes come again: a response's ids repeat on every delta of it) and the bytes of a frame up to its long
 * value's opening quote, with the members read from them. A frame starting with exactly those bytes is read
 * from the long value on: the scan is a function of the bytes before it, so its members and state are the same.
 */
export class FlatMemo {
  readonly values: (string | number | undefined)[] = [];
  readonly headSlots: (string | number | undefined)[] = [];
  headLength = 0;
  private readonly head = Buffer.alloc(MAX_HEAD);
  /** Heads noted since the last frame that matched one: a source whose heads never repeat stops being noted. */
  private misses = 0;

  sameHead(buf: Buffer): boolean {
    const head = this.head;
    for (let j = this.headLength - 1; j >= 0; j--) {
      if (buf[j] !== head[j]) {
        this.misses++;
        return false;
      }
    }
    this.misses = 0;
    return true;
  }

  /** The bytes before `length` of `buf` read into `out` (the long value starts at `length`). */
  noteHead(buf: Buffer, length: number, out: readonly (string | number | undefined)[]): void {
    // A source whose heads differ on every frame (an event id first) is noted again only now and then.
    if (length > MAX_HEAD) {
      this.headLength = 0;
      return;
    }
    if (this.misses > 2 && (this.misses & 63) !== 0) return;
    buf.copy(this.head, 0, 0, length);
    this.headLength = length;
    for (let k = 0; k < out.length; k++) this.headSlots[k] = out[k];
  }
}
