/**
 * Whether every byte of a range is in the standard base64 alphabet (`A-Z a-z 0-9 + /`), the scan under the
 * strict base64 check of a frame's bytes (audio.ts, checkBase64Bytes). A WebAssembly SIMD loop does 32 bytes
 * a step; a table loop in JavaScript was slower than the native decode it replaces (docs/benchmarks.md,
 * 2026-11-27, issue 13 item 1). Without WebAssembly SIMD, and for ranges past its memory, the table loop.
 */

/** 0 for a byte of the standard base64 alphabet, 1 for any other. */
const NOT_B64 = new Uint8Array(256).fill(1);
for (const c of 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/') NOT_B64[c.charCodeAt(0)] = 0;
/** The same for two bytes at once (a 16-bit half of a word read in either byte order): 0 when both are alphabet. */
const PAIR_NOT_B64 = new Uint8Array(65536);
for (let p = 0; p < 65536; p++) PAIR_NOT_B64[p] = NOT_B64[p & 0xff]! | NOT_B64[p >>> 8]!;

/** The table loop: a lookup per byte pair over the aligned middle, read as 32-bit words. */
export function isBase64AlphabetJs(b: Uint8Array, from: number, to: number): boolean {
  let bad = 0;
  let i = from;
  const unaligned = Math.min((4 - ((b.byteOffset + from) & 3)) & 3, to - from);
  for (const head = from + unaligned; i < head; i++) bad |= NOT_B64[b[i]!]!;
  const words = (to - i) >> 2;
  if (words > 0) {
    const w32 = new Uint32Array(b.buffer, b.byteOffset + i, words);
    for (let k = 0; k < words; k++) {
      const w = w32[k]!;
      bad |= PAIR_NOT_B64[w & 0xffff]! | PAIR_NOT_B64[w >>> 16]!;
    }
    i += words << 2;
  }
  for (; i < to; i++) bad |= NOT_B64[b[i]!]!;
  return bad === 0;
}

/**
 * The module: `memory` (one 64 KiB page) and `valid(n)`, 1 when bytes 0..n of memory (n a multiple of 32) are
 * all alphabet. Per 16 bytes: the high nibble and the low nibble each pick a class mask (i8x16.swizzle), and
 * a byte is outside the alphabet when the two masks share a bit. Classes: high nibble 0, 1 or 8-F (never
 * valid); 2 (valid low nibbles B `+`, F `/`); 3 (0-9); 4 and 6 (1-F); 5 and 7 (0-A).
 */
function moduleBytes(): Uint8Array {
  const SIMD = 0xfd;
  const HI = Array.from({ length: 16 }, (_, h) =>
    h === 2 ? 0x02 : h === 3 ? 0x04 : h === 4 || h === 6 ? 0x08 : h === 5 || h === 7 ? 0x10 : 0x01,
  );
  const LO = Array.from(
    { length: 16 },
    (_, l) => 0x01 | (l !== 0xb && l !== 0xf ? 0x02 : 0) | (l >= 0xa ? 0x04 : 0) | (l === 0 ? 0x08 : 0) | (l >= 0xb ? 0x10 : 0),
  );
  const v128 = (bytes: number[]): number[] => [SIMD, 0x0c, ...bytes];
  const get = (i: number): number[] => [0x20, i];
  const set = (i: number): number[] => [0x21, i];
  // Locals: 0 n, 1 i, 2 bad (v128, OR of every step's masks), 3 v, 4 HI, 5 LO, 6 0x0f in every lane.
  const step = (offset: number): number[] => [
    ...get(4), ...get(1), SIMD, 0x00, 0x04, offset, ...set(3), // v = load(i + offset)
    ...get(3), 0x41, 0x04, SIMD, 0x6d, SIMD, 0x0e, // HI[v >> 4]
    ...get(5), ...get(3), ...get(6), SIMD, 0x4e, SIMD, 0x0e, // LO[v & 15]
    SIMD, 0x4e, ...get(2), SIMD, 0x50, ...set(2), // bad |= HI[..] & LO[..]
  ]; // prettier-ignore
  const code = [
    ...v128(HI), ...set(4), ...v128(LO), ...set(5), ...v128(new Array<number>(16).fill(0x0f)), ...set(6),
    0x02, 0x40, 0x03, 0x40, // block, loop
    ...get(1), ...get(0), 0x4f, 0x0d, 0x01, // i >= n: out
    ...step(0), ...step(16),
    ...get(1), 0x41, 0x20, 0x6a, ...set(1), // i += 32
    0x0c, 0x00, 0x0b, 0x0b, // again; end loop, end block
    ...get(2), SIMD, 0x53, 0x45, 0x0b, // !any_true(bad)
  ]; // prettier-ignore
  const body = [0x02, 0x01, 0x7f, 0x05, 0x7b, ...code]; // locals: 1 i32, 5 v128
  const section = (id: number, bytes: number[]): number[] => [id, ...uleb(bytes.length), ...bytes];
  const name = (s: string): number[] => [s.length, ...Buffer.from(s, 'latin1')];
  return new Uint8Array([
    0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00,
    ...section(1, [1, 0x60, 1, 0x7f, 1, 0x7f]), // type: (i32) -> i32
    ...section(3, [1, 0]), // one function
    ...section(5, [1, 0, 1]), // one memory, one page
    ...section(7, [2, ...name('memory'), 2, 0, ...name('valid'), 0, 0]),
    ...section(10, [1, ...uleb(body.length), ...body]),
  ]); // prettier-ignore
}

function uleb(n: number): number[] {
  const out: number[] = [];
  do {
    const b = n & 0x7f;
    n >>>= 7;
    out.push(n === 0 ? b : b | 0x80);
  } while (n !== 0);
  return out;
}

interface Simd {
  memory: Uint8Array;
  valid: (n: number) => number;
}

function instantiate(): Simd | null {
  try {
    const { exports } = new WebAssembly.Instance(new WebAssembly.Module(moduleBytes()));
    const { memory, valid } = exports as { memory: WebAssembly.Memory; valid: (n: number) => number };
    return { memory: new Uint8Array(memory.buffer), valid };
  } catch {
    return null; // no WebAssembly SIMD here
  }
}

const simd = instantiate();
/** Ranges up to this many bytes go through the SIMD loop (its memory, less the padding to 32). */
const SIMD_MAX = 65536 - 32;

/** Whether every byte of `b[from..to)` is in the standard base64 alphabet. */
export function isBase64Alphabet(b: Uint8Array, from: number, to: number): boolean {
  const n = to - from;
  if (simd === null || n > SIMD_MAX || n < 32) return isBase64AlphabetJs(b, from, to);
  const mem = simd.memory;
  mem.set(new Uint8Array(b.buffer, b.byteOffset + from, n));
  const padded = (n + 31) & ~31;
  for (let i = n; i < padded; i++) mem[i] = 0x41; // "A"
  return simd.valid(padded) === 1;
}

/** Whether the SIMD loop is in use (tests run both). */
export const SIMD_IN_USE = simd !== null;
