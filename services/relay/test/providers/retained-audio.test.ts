import fc from 'fast-check';
import t from 'tap';
import { Audio } from '../../src/audio.js';
import { RetainedAudio, SLAB_BYTES, SlabPool } from '../../src/providers/shared/retained-audio.js';

/** Even-sized PCM, small frames mostly, now and then one across several slabs. */
const pcm = fc
  .oneof(
    { weight: 8, arbitrary: fc.integer({ min: 1, max: 2400 }) },
    { weight: 1, arbitrary: fc.integer({ min: 1, max: SLAB_BYTES + 100 }) },
    { weight: 1, arbitrary: fc.integer({ min: SLAB_BYTES, max: 2 * SLAB_BYTES + 2 }) },
  )
  .chain((half) => fc.uint8Array({ minLength: 2 * half, maxLength: 2 * half }))
  .map((b) => Buffer.from(b));

const step = fc.oneof(
  { weight: 10, arbitrary: fc.record({ pcm, base64: fc.boolean(), keep: fc.constantFrom(0, 960, 96_000, 200_000, 1_440_000) }) },
  { weight: 1, arbitrary: fc.constant('clear' as const) },
);

/** Whether the store holds exactly the newest `keep` bytes of the reference, in order, over its chunks. */
function contents(store: RetainedAudio): Buffer {
  const chunks = store.chunks();
  for (const c of chunks) if (c.bytes > SLAB_BYTES || c.bytes === 0) throw new Error(`chunk of ${c.bytes} bytes`);
  return Buffer.concat(chunks.map((c) => c.pcm));
}

t.test('the store holds exactly the newest bytes appended, whatever the frame sizes, forms and bounds', async (t) => {
  fc.assert(
    fc.property(fc.array(step, { maxLength: 60 }), (steps) => {
      const pool = new SlabPool();
      const store = new RetainedAudio(pool);
      let reference = Buffer.alloc(0);
      for (const s of steps) {
        if (s === 'clear') {
          store.clear();
          reference = Buffer.alloc(0);
          continue;
        }
        const audio = s.base64 ? Audio.ofCheckedBase64(s.pcm.toString('base64'), s.pcm.length) : Audio.ofPcm(s.pcm);
        store.append(audio, s.keep);
        reference = Buffer.concat([reference, s.pcm]);
        reference = reference.subarray(Math.max(0, reference.length - s.keep));
        if (store.bytes !== reference.length || !contents(store).equals(reference)) return false;
      }
      return true;
    }),
    { numRuns: 100 },
  );
  t.pass('100 generated sequences');
});

t.test('slabs go back to the pool when let go, and the pool keeps no more than its bound', async (t) => {
  const pool = new SlabPool(3 * SLAB_BYTES);
  const a = new RetainedAudio(pool);
  const b = new RetainedAudio(pool);
  const frame = Audio.ofPcm(Buffer.alloc(960, 7));
  const frames = Math.ceil((2.5 * SLAB_BYTES) / 960); // three slabs each
  for (let i = 0; i < frames; i++) {
    a.append(frame, Infinity);
    b.append(frame, Infinity);
  }
  t.equal(pool.freeSlabs, 0);
  a.clear();
  t.equal(pool.freeSlabs, 3, "a's three slabs are free");
  b.clear();
  t.equal(pool.freeSlabs, 3, 'beyond the bound, slabs are left to the collector');
  // Letting the oldest go frees whole slabs as they empty.
  for (let i = 0; i < frames; i++) a.append(frame, 2 * 960);
  t.equal(a.bytes, 2 * 960);
  t.equal(pool.freeSlabs, 2, 'only the slab (or two) under the newest bytes is held');
  a.append(frame, 0);
  t.equal(a.bytes, 0);
  t.equal(pool.freeSlabs, 3);
  t.same(a.chunks(), []);
});

t.test('replayed chunks are copies: reusing a slab does not change audio already handed out', async (t) => {
  const pool = new SlabPool();
  const a = new RetainedAudio(pool);
  a.append(Audio.ofPcm(Buffer.alloc(960, 1)), Infinity);
  const [chunk] = a.chunks();
  a.clear();
  const b = new RetainedAudio(pool);
  b.append(Audio.ofPcm(Buffer.alloc(960, 2)), Infinity);
  t.ok(chunk!.pcm.equals(Buffer.alloc(960, 1)));
});
