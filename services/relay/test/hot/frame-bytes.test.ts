// hot/frame-bytes.ts and hot/audio-delta.ts against the plain path: a frame written into slab bytes is
// byte for byte the Buffer.from of the concatenated string, and slab frames never share bytes.
import fc from 'fast-check';
import t from 'tap';
import { Audio } from '../../src/audio.js';
import { audioDeltaFrame, AudioDeltaHeads, audioDeltaPrefix } from '../../src/hot/audio-delta.js';
import { EventIds } from '../../src/hot/event-ids.js';
import { asciiBytes, frameBuffer, writeAscii } from '../../src/hot/frame-bytes.js';

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

const ascii = (max: number) => fc.string({ unit: fc.integer({ min: 0x20, max: 0x7e }).map((c) => String.fromCharCode(c)), maxLength: max });

t.test('an output delta is byte for byte the plain concatenation, whatever its parts (property)', async (t) => {
  const heads = new AudioDeltaHeads();
  const place = fc.record({
    responseId: ascii(20),
    itemId: ascii(20),
    outputIndex: fc.nat(1000),
    contentIndex: fc.nat(10),
  });
  const audio = fc.oneof(
    fc.uint8Array({ maxLength: 3000 }).map((b) => Audio.ofPcm(Buffer.from(b))),
    fc.uint8Array({ maxLength: 3000 }).map((b) => Audio.ofCheckedBase64(Buffer.from(b).toString('base64'), b.length)),
  );
  const ids = new EventIds();
  const prefix = ids.next().slice(0, -1);
  let n = 1;
  await fc.assert(
    fc.asyncProperty(place, fc.option(ascii(30)), fc.constantFrom('","audio":"', '","delta":"'), audio, async (p, id, member, a) => {
      const head = heads.of(p);
      // A string id, or the codecs' EventIds (written as bytes): the plain id is then next()'s.
      const written = id ?? prefix + (n++).toString(36);
      const frame = audioDeltaFrame(head, id ?? ids, Buffer.from(member, 'latin1'), a);
      const plain = Buffer.from(audioDeltaPrefix(p) + '"event_id":"' + written + member + a.base64 + '"}', 'latin1');
      t.equal(frame.compare(plain), 0);
      t.equal(head.compare(Buffer.from(audioDeltaPrefix(p) + '"event_id":"', 'latin1')), 0, 'the head is the plain prefix');
      t.equal(heads.of(p), head, 'made once per place object');
    }),
    { numRuns: 300 },
  );
});

t.test('writeAscii writes what Buffer#write writes in latin1, at any offset (property)', async () => {
  fc.assert(
    fc.property(ascii(80), fc.nat(20), (s, at) => {
      const fast = Buffer.alloc(at + s.length + 4, 0x2e);
      const plain = Buffer.alloc(at + s.length + 4, 0x2e);
      const end = writeAscii(fast, at, s);
      plain.write(s, at, 'latin1');
      return end === at + s.length && fast.compare(plain) === 0;
    }),
    { numRuns: 2_000 },
  );
});
