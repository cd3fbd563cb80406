// libopus by opusscript with many coders alive at once, as a relay holds them for concurrent calls: each coder's
// audio must survive the others' (one WebAssembly heap for all of them).
import t from 'tap';
import OpusScript from 'opusscript';
import { FRAME_BYTES, OpusDecoder, OpusEncoder, withPcmViewsInPlace } from '../src/opus.js';
import { rms, zeroCrossingHz } from '../src/testing.js';

function tone(hz: number, frame: number): Buffer {
  const pcm = Buffer.alloc(FRAME_BYTES);
  for (let i = 0; i < FRAME_BYTES / 2; i++)
    pcm.writeInt16LE(Math.round(8000 * Math.sin((2 * Math.PI * hz * (frame * 480 + i)) / 24_000)), 2 * i);
  return pcm;
}

t.test('forty calls’ coders alive at once, created and used interleaved: each round trip keeps its own tone', async (t) => {
  const calls: { hz: number; enc: OpusEncoder; dec: OpusDecoder; out: Buffer[] }[] = [];
  // A browser-like 48 kHz coder pair in the same heap too (the test peers share the process with the relay).
  const browser = [0, 1].map(() => withPcmViewsInPlace(new OpusScript(48_000, 1, OpusScript.Application.VOIP)));
  t.teardown(() => browser.forEach((c) => c.delete()));
  for (let k = 0; k < 40; k++) {
    calls.push({ hz: 300 + 10 * k, enc: new OpusEncoder(), dec: new OpusDecoder(), out: [] });
    for (const c of calls) c.out.push(c.dec.decode(c.enc.encode(tone(c.hz, c.out.length))) ?? Buffer.alloc(0));
    const loud = Buffer.alloc(1920, 0x40);
    browser[1]!.decode(browser[0]!.encode(loud, 960));
  }
  for (let f = 0; f < 20; f++) for (const c of calls) c.out.push(c.dec.decode(c.enc.encode(tone(c.hz, c.out.length))) ?? Buffer.alloc(0));
  for (const c of calls) {
    const heard = Buffer.concat(c.out.slice(-15));
    const hz = zeroCrossingHz(heard, 24_000);
    t.ok(Math.abs(hz - c.hz) < 15 && rms(heard) > 3000, `${c.hz} Hz call: heard ${Math.round(hz)} Hz at rms ${Math.round(rms(heard))}`);
    c.enc.close();
    c.dec.close();
  }
  // A coder made after all that still works: the heap is whole.
  const enc = new OpusEncoder();
  const dec = new OpusDecoder();
  t.equal(dec.decode(enc.encode(tone(440, 0)))?.length, FRAME_BYTES);
  enc.close();
  dec.close();
});
