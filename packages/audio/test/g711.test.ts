import t from 'tap';
import fc from 'fast-check';
import {
  decodeG711,
  delayMs,
  DOWN_24K_TO_16K,
  DOWN_24K_TO_8K,
  encodeG711,
  FrameChunker,
  G711Decoder,
  G711Encoder,
  g711Ms,
  Resampler,
  resampledCount,
  UP_8K_TO_24K,
  type G711Law,
} from '../src/index.js';

const LAWS: G711Law[] = ['pcmu', 'pcma'];

/** PCM16LE of a sine at `hz`, `rate` samples a second, `n` samples. */
function sine(hz: number, rate: number, n: number, amplitude = 8000): Int16Array {
  const s = new Int16Array(n);
  for (let i = 0; i < n; i++) s[i] = Math.round(amplitude * Math.sin((2 * Math.PI * hz * i) / rate));
  return s;
}

function rms(s: Int16Array, from = 0): number {
  let acc = 0;
  for (let i = from; i < s.length; i++) acc += s[i]! * s[i]!;
  return Math.sqrt(acc / (s.length - from));
}

/** Cuts `total` into chunks at the given (sorted, deduplicated) points. */
function cuts(total: number, points: number[]): [number, number][] {
  const at = [...new Set(points.map((p) => p % (total + 1)))].sort((a, b) => a - b);
  const out: [number, number][] = [];
  let prev = 0;
  for (const p of [...at, total]) {
    out.push([prev, p]);
    prev = p;
  }
  return out;
}

t.test('every G.711 code survives decode then encode (μ-law has two zeros: −0 comes back as +0)', async (t) => {
  const all = Uint8Array.from({ length: 256 }, (_, i) => i);
  for (const law of LAWS) {
    const back = encodeG711(law, decodeG711(law, all));
    for (let i = 0; i < 256; i++) {
      if (law === 'pcmu' && i === 0x7f) t.equal(back[i], 0xff, 'μ-law −0 encodes as +0');
      else if (back[i] !== i) t.fail(`${law} code ${i} came back as ${back[i]}`);
    }
  }
  // Reference points of G.711: silence and the extremes.
  t.equal(encodeG711('pcmu', Int16Array.of(0))[0], 0xff);
  t.equal(encodeG711('pcma', Int16Array.of(0))[0], 0xd5);
  t.equal(decodeG711('pcmu', Uint8Array.of(0x00))[0], -32124);
  t.equal(decodeG711('pcma', Uint8Array.of(0xaa))[0], 32256);
});

t.test('linear samples round trip within G.711 quantization', async (t) => {
  for (const law of LAWS) {
    fc.assert(
      fc.property(fc.integer({ min: -32768, max: 32767 }), (x) => {
        const y = decodeG711(law, encodeG711(law, Int16Array.of(x)))[0]!;
        // A segment's step is 1/16 of its range: the error is within 1/32 of |x| plus the smallest step.
        return Math.abs(y - x) <= Math.abs(x) / 16 + 64;
      }),
      { numRuns: 5000 },
    );
  }
});

t.test('the resampler gives the same samples however the stream is cut', async (t) => {
  for (const design of [UP_8K_TO_24K, DOWN_24K_TO_8K, DOWN_24K_TO_16K]) {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 3000 }),
        fc.array(fc.nat(), { maxLength: 12 }),
        fc.integer({ min: 0, max: 1_000_000 }),
        (n, points, seed) => {
          const input = new Int16Array(n);
          for (let i = 0; i < n; i++) input[i] = ((i * 7919 + seed) % 65536) - 32768;
          const whole = new Resampler(design).push(input);
          const r = new Resampler(design);
          const parts = cuts(n, points).map(([a, b]) => r.push(input.subarray(a, b)));
          const joined = Int16Array.from(parts.flatMap((p) => [...p]));
          return (
            whole.length === resampledCount(n, design.up, design.down) &&
            joined.length === whole.length &&
            joined.every((v, i) => v === whole[i]) &&
            r.samplesOut === whole.length &&
            r.samplesIn === n
          );
        },
      ),
      { numRuns: 150 },
    );
  }
});

t.test('no millisecond gained or lost over a long call, however it is framed', async (t) => {
  for (const law of LAWS) {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 1, max: 2000 }), { minLength: 1, maxLength: 400 }), (frames) => {
        // In: G.711 frames of any size decode to 6 bytes of 24 kHz PCM16 each byte: the same milliseconds.
        const dec = new G711Decoder(law);
        let g711In = 0;
        let pcmOut = 0;
        for (const size of frames) {
          pcmOut += dec.push(new Uint8Array(size).fill(0x55)).length;
          g711In += size;
        }
        if (pcmOut !== g711In * 6 || pcmOut / 48 !== g711In / 8) return false;
        // Out: PCM16 deltas of any (even) size encode to ceil(samples / 3) bytes over the stream: under one
        // G.711 byte (1/8 ms) of difference, never drifting.
        const enc = new G711Encoder(law);
        let samples = 0;
        let bytesOut = 0;
        for (const size of frames) {
          const pcm = Buffer.alloc(size * 2);
          samples += size;
          bytesOut += enc.push(pcm).length;
        }
        return bytesOut === Math.ceil(samples / 3) && Math.abs(bytesOut / 8 - samples / 24) < 1 / 8;
      }),
      { numRuns: 200 },
    );
  }
});

t.test('a twenty-minute call at 20 ms frames keeps its milliseconds exactly', async (t) => {
  const dec = new G711Decoder('pcmu');
  const enc = new G711Encoder('pcmu');
  const frame = new Uint8Array(160).fill(0xff);
  const pcmFrame = Buffer.alloc(960);
  let inMs = 0;
  let outBytes = 0;
  const frames = (1200 * 1000) / 20;
  for (let i = 0; i < frames; i++) {
    inMs += dec.push(frame).length / 48;
    outBytes += enc.push(pcmFrame).length;
  }
  t.equal(inMs, 1_200_000, 'input: 1,200,000 ms of 24 kHz PCM16 from 1,200,000 ms of μ-law');
  t.equal(g711Ms(outBytes), 1_200_000, 'output: 1,200,000 ms of μ-law from 1,200,000 ms of PCM16');
});

t.test('an odd byte of provider PCM is carried, not lost', async (t) => {
  const enc = new G711Encoder('pcma');
  const pcm = Buffer.alloc(601);
  t.equal(enc.push(pcm).length, 100, '300 whole samples → 100 bytes');
  t.equal(enc.push(Buffer.alloc(5)).length, 1, 'the carried byte completes a sample: 303 samples → 101 bytes');
});

t.test('a tone in the telephone band keeps its level through 8 → 24 → 8 kHz', async (t) => {
  for (const law of LAWS) {
    const tone = sine(1000, 8000, 8000);
    const g711 = encodeG711(law, tone);
    const pcm24 = new G711Decoder(law).push(g711);
    const up = new Int16Array(pcm24.buffer, pcm24.byteOffset, pcm24.length / 2);
    t.equal(up.length, 24_000);
    const back = decodeG711(law, new G711Encoder(law).push(pcm24));
    const ratioUp = rms(up, 480) / rms(tone);
    const ratioBack = rms(back, 160) / rms(tone);
    t.ok(ratioUp > 0.95 && ratioUp < 1.05, `${law} 24 kHz level ${ratioUp.toFixed(3)}`);
    t.ok(ratioBack > 0.93 && ratioBack < 1.07, `${law} back at 8 kHz ${ratioBack.toFixed(3)}`);
  }
  // Above 8 kHz's Nyquist, a 24 kHz tone is stopped rather than aliased into the call.
  const high = sine(6000, 24_000, 24_000);
  const down = new Resampler(DOWN_24K_TO_8K).push(high);
  t.ok(rms(down, 100) / rms(high) < 0.01, 'a 6 kHz tone is attenuated by more than 40 dB');
  t.ok(delayMs(UP_8K_TO_24K, 8000) < 2.5 && delayMs(DOWN_24K_TO_8K, 24_000) < 2.5, 'each direction lags under 2.5 ms');
});

t.test("24 → 16 kHz (Gemini's input): 2/3 of the samples, DC and the voice band kept, 10 kHz stopped", async (t) => {
  const tone = sine(1000, 24_000, 24_000);
  const whole = new Resampler(DOWN_24K_TO_16K).push(tone);
  t.equal(whole.length, 16_000, 'a second is a second');
  const ratio = rms(whole, 200) / rms(tone);
  t.ok(ratio > 0.99 && ratio < 1.01, `1 kHz level ${ratio.toFixed(4)}`);
  const dc = new Resampler(DOWN_24K_TO_16K).push(new Int16Array(2400).fill(10_000));
  t.equal(dc.at(-1), 10_000, 'DC passes exactly once the filter is full');
  // 10 kHz is above the new 8 kHz Nyquist: removed instead of folding to 6 kHz.
  const high = new Resampler(DOWN_24K_TO_16K).push(sine(10_000, 24_000, 24_000));
  t.ok(rms(high, 200) / rms(tone) < 0.001, `10 kHz attenuated by more than 60 dB (${rms(high, 200).toFixed(1)})`);
  t.ok(delayMs(DOWN_24K_TO_16K, 24_000) < 1.1, 'it lags about 1 ms');
});

t.test('frames of 160 bytes, the remainder held and flushed', async (t) => {
  fc.assert(
    fc.property(fc.array(fc.integer({ min: 0, max: 1000 }), { maxLength: 50 }), (sizes) => {
      const c = new FrameChunker(160);
      let total = 0;
      let out = 0;
      let counter = 0;
      const seen: number[] = [];
      for (const size of sizes) {
        const b = Buffer.alloc(size);
        for (let i = 0; i < size; i++) b[i] = counter++ & 0xff;
        total += size;
        for (const f of c.push(b)) {
          if (f.length !== 160) return false;
          out += f.length;
          seen.push(...f);
        }
      }
      const last = c.flush();
      if (last) {
        if (last.length >= 160) return false;
        out += last.length;
        seen.push(...last);
      }
      return out === total && c.pending === 0 && seen.every((v, i) => v === (i & 0xff));
    }),
  );
  const c = new FrameChunker(160);
  c.push(Buffer.alloc(100));
  c.clear();
  t.equal(c.flush(), null, 'a cleared chunker holds nothing');
});
