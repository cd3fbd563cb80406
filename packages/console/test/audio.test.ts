import t from 'tap';
import { LinearResampler, floatToPcm16, pcm16ToFloat } from '../web/audio.js';

const sine = (rate: number, hz: number, n: number, from = 0) =>
  Float32Array.from({ length: n }, (_, i) => Math.sin((2 * Math.PI * hz * (from + i)) / rate));

t.test('resampling 48 kHz → 24 kHz keeps the length and the signal, across chunk boundaries', async (t) => {
  const r = new LinearResampler(48_000, 24_000);
  const chunks = [128, 128, 77, 300, 1].map((n, i, all) =>
    sine(
      48_000,
      440,
      n,
      all.slice(0, i).reduce((a, b) => a + b, 0),
    ),
  );
  const out = chunks.flatMap((c) => [...r.push(c)]);
  t.equal(out.length, Math.ceil(634 / 2), 'one output sample per two inputs');
  const expected = sine(24_000, 440, out.length);
  t.ok(
    out.every((v, i) => Math.abs(v - expected[i]!) < 1e-6),
    'each output sample is the input at its instant',
  );
});

t.test('resampling 24 kHz → 44.1 kHz interpolates continuously', async (t) => {
  const r = new LinearResampler(24_000, 44_100);
  const input = sine(24_000, 300, 2400);
  const out = [...r.push(input.subarray(0, 1000)), ...r.push(input.subarray(1000))];
  t.ok(Math.abs(out.length - 4410) <= 1, `${out.length} samples for 100 ms`);
  const expected = sine(44_100, 300, out.length);
  t.ok(
    out.every((v, i) => Math.abs(v - expected[i]!) < 0.01),
    'within linear interpolation error of the true signal',
  );
  t.throws(() => new LinearResampler(0, 24_000));
});

t.test('PCM16 conversions', async (t) => {
  t.same([...floatToPcm16(Float32Array.from([0, 1, -1, 2, -2, 0.5]))], [0, 32767, -32768, 32767, -32768, 16384]);
  t.same([...pcm16ToFloat(Int16Array.from([-32768, 16384]))], [-1, 0.5]);
});
