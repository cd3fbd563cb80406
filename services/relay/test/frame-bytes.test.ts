import fc from 'fast-check';
import t from 'tap';
import { Audio } from '../src/audio.js';
import { audioDeltaFrame, AudioDeltaHeads } from '../src/codecs/svc-realtime-v1/codec.js';
import { asciiBytes, frameBuffer, writeAscii } from '../src/hot/frame-bytes.js';

t.test('frames carved from the slab never overlap, across slabs and for large frames', async (t) => {
  const frames: { buf: Buffer; fill: number }[] = [];
  // Many slabs' worth of frames of every size up to the slab bound, then a few larger than it.
  let total = 0;
  for (let i = 0; total < 3 * 256 * 1024; i++) {
    const size = 1 + ((i * 7919) % 16384);
    const buf = frameBuffer(size);
    t.equal(buf.length, size);
    buf.fill(i & 255);
    frames.push({ buf, fill: i & 255 });
    total += size;
  }
  for (const size of [16385, 100_000]) {
    const buf = frameBuffer(size);
    buf.fill(7);
    frames.push({ buf, fill: 7 });
  }
  const bad = frames.filter(({ buf, fill }) => buf.some((b) => b !== fill));
  t.equal(bad.length, 0, 'every frame still holds what was written into it');
});

t.test('an output delta is the same JSON whatever form its audio is in, in both dialects', async (t) => {
  const heads = new AudioDeltaHeads();
  await fc.assert(
    fc.asyncProperty(
      fc.uint8Array({ minLength: 2, maxLength: 4000 }),
      fc.string({ unit: fc.constantFrom(...'abcXYZ019_~-'), minLength: 1, maxLength: 40 }),
      fc.nat(9),
      fc.nat(3),
      async (bytes, id, outputIndex, contentIndex) => {
        const pcm = Buffer.from(bytes);
        const place = { responseId: `resp_${id}`, itemId: `item_${id}`, outputIndex, contentIndex };
        for (const [member, name] of [
          [asciiBytes('","audio":"'), 'audio'],
          [asciiBytes('","delta":"'), 'delta'],
        ] as const) {
          const fromPcm = audioDeltaFrame(heads.of(place), `evt_${id}`, member, Audio.ofPcm(pcm));
          const fromText = audioDeltaFrame(heads.of(place), `evt_${id}`, member, Audio.ofCheckedBase64(pcm.toString('base64'), pcm.length));
          t.equal(fromPcm.compare(fromText), 0);
          t.same(JSON.parse(fromText.toString('latin1')), {
            type: 'response.output_audio.delta',
            response_id: place.responseId,
            item_id: place.itemId,
            output_index: outputIndex,
            content_index: contentIndex,
            event_id: `evt_${id}`,
            [name]: pcm.toString('base64'),
          });
        }
      },
    ),
    { numRuns: 200 },
  );
});

t.test('writeAscii writes the string and returns the offset after it', async (t) => {
  const out = Buffer.alloc(12, 0x2e);
  t.equal(writeAscii(out, 2, 'evt_1'), 7);
  t.equal(out.toString('latin1'), '..evt_1.....');
});
