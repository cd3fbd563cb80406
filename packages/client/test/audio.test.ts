import t from 'tap';
import {
  audioAppendEvents,
  BYTES_PER_MS,
  chunkPcm,
  decodeWav,
  encodeWav,
  fromBase64,
  pcmBytes,
  pcmSamples,
  toBase64,
  toGatewayPcm,
} from '../src/index.js';
import { atobBase64, btoaBase64 } from '../src/audio.js';

const tone = (ms: number) => {
  const s = new Int16Array((ms * 24000) / 1000);
  for (let i = 0; i < s.length; i++) s[i] = Math.round(8000 * Math.sin((2 * Math.PI * 440 * i) / 24000));
  return s;
};

t.test('Int16Array samples become little-endian bytes without a copy', async (t) => {
  const s = new Int16Array([1, -2, 0x1234]);
  const b = pcmBytes(s);
  t.same([...b], [1, 0, 0xfe, 0xff, 0x34, 0x12]);
  t.equal(b.buffer, s.buffer);
  t.same([...pcmSamples(b)], [1, -2, 0x1234]);
  // A misaligned view is copied, not read across sample boundaries.
  const odd = new Uint8Array(7);
  odd.set(b, 1);
  t.same([...pcmSamples(odd.subarray(1))], [1, -2, 0x1234]);
});

t.test('chunkPcm cuts 20 ms frames of 960 bytes, the last one shorter', async (t) => {
  const frames = chunkPcm(tone(50));
  t.same(
    frames.map((f) => f.byteLength),
    [960, 960, 480],
  );
  t.same(
    chunkPcm(tone(50), 25).map((f) => f.byteLength),
    [25 * BYTES_PER_MS, 25 * BYTES_PER_MS],
  );
  t.throws(() => chunkPcm(new Uint8Array(3)), /odd/);
  t.throws(() => chunkPcm(new Uint8Array(4), 0), /frameMs/);
  t.same(chunkPcm(new Uint8Array(0)), []);
});

t.test('append events carry base64 that decodes to the same bytes, in order', async (t) => {
  const pcm = pcmBytes(tone(45));
  const events = audioAppendEvents(pcm);
  t.equal(events.length, 3);
  t.ok(events.every((e) => e.type === 'input_audio_buffer.append'));
  const joined = new Uint8Array(events.flatMap((e) => [...fromBase64(e.audio)]));
  t.same([...joined], [...pcm]);
});

t.test('base64 without Node Buffer (the browser path) matches Buffer', async (t) => {
  const bytes = new Uint8Array(70_001).map((_, i) => (i * 31) & 0xff);
  const viaBuffer = Buffer.from(bytes).toString('base64');
  t.equal(btoaBase64(bytes), viaBuffer);
  t.equal(toBase64(bytes), viaBuffer);
  t.equal(toBase64(bytes.subarray(1, 4)), Buffer.from(bytes.subarray(1, 4)).toString('base64'));
  t.same([...atobBase64(viaBuffer)], [...bytes]);
  t.same([...fromBase64(viaBuffer)], [...bytes]);
});

t.test('WAV round trip, and any 16-bit WAV converted to 24 kHz mono', async (t) => {
  const pcm = pcmBytes(tone(100));
  const wav = encodeWav(pcm);
  t.equal(wav.byteLength, 44 + pcm.byteLength);
  const back = decodeWav(wav);
  t.same({ rate: back.sampleRate, channels: back.channels }, { rate: 24000, channels: 1 });
  t.same([...toGatewayPcm(back)], [...pcm]);

  // 48 kHz stereo: half the frames after resampling, channels averaged.
  const stereo = new Int16Array(4800 * 2);
  for (let i = 0; i < 4800; i++) {
    stereo[2 * i] = 1000;
    stereo[2 * i + 1] = 3000;
  }
  const converted = pcmSamples(toGatewayPcm(decodeWav(encodeWav(stereo, { sampleRate: 48000, channels: 2 }))));
  t.equal(converted.length, 2400);
  t.ok(converted.every((v) => v === 2000));

  t.throws(() => decodeWav(new TextEncoder().encode('not a wav file at all')), /not a WAV/);
  const eightBit = encodeWav(pcm);
  new DataView(eightBit.buffer).setUint16(34, 8, true);
  t.throws(() => decodeWav(eightBit), /16-bit PCM/);
});
