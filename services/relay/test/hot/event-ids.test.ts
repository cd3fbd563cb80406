// hot/event-ids.ts against the plain path, next(): writeNext writes the very id next() answers and moves the
// count on alike, for every count past a fourth base-36 digit and in random interleavings.
import fc from 'fast-check';
import t from 'tap';
import { Audio } from '../../src/audio.js';
import { SvcRealtimeV1Codec } from '../../src/codecs/svc-realtime-v1/codec.js';
import { EventIds } from '../../src/hot/event-ids.js';

t.test('an event id written as bytes is the id next() answers, and the count moves on alike', async (t) => {
  const ids = new EventIds();
  const prefix = ids.next().slice(0, -1); // the first id ends in 0
  const out = Buffer.alloc(64, 0x2a);
  let bad = 0;
  // Every count up to past 36^3, where the ids take a fourth digit; next() and writeNext() interleaved.
  for (let n = 1; n < 50_000; n++) {
    const expected = prefix + n.toString(36);
    if (n % 7 === 0) {
      if (ids.next() !== expected) bad++;
      continue;
    }
    const length = ids.nextLength();
    const end = ids.writeNext(out, 3);
    if (length !== expected.length || end !== 3 + length || out.toString('latin1', 3, end) !== expected || out[end] !== 0x2a) bad++;
  }
  t.equal(bad, 0, 'ids that differ from next()');
  // The deltas of both codecs carry it.
  const c = new SvcRealtimeV1Codec(ids);
  const place = { responseId: 'resp_x', itemId: 'item_a', outputIndex: 0, contentIndex: 0 };
  const frame = JSON.parse(c.encode({ type: 'response.audio.delta', place, audio: Audio.ofPcm(Buffer.from([1, 2])) }).toString()) as {
    event_id: string;
  };
  t.equal(frame.event_id, prefix + (50_000).toString(36));
  t.equal(ids.next(), prefix + (50_001).toString(36));
});

t.test('writeNext against next() on random interleavings, offsets and jumps (property)', async () => {
  // Each step: next(), or writeNext at an offset into a buffer whose other bytes must stay; runs of next()
  // move the count across digit boundaries (36, 1296, 46656).
  const step = fc.oneof(
    fc.record({ kind: fc.constant('next' as const), times: fc.integer({ min: 1, max: 3000 }) }),
    fc.record({ kind: fc.constant('write' as const), at: fc.nat(40) }),
  );
  fc.assert(
    fc.property(fc.array(step, { minLength: 1, maxLength: 40 }), (steps) => {
      const fast = new EventIds();
      const prefix = fast.next().slice(0, -1);
      let n = 1;
      for (const s of steps) {
        if (s.kind === 'next') {
          for (let k = 0; k < s.times; k++) if (fast.next() !== prefix + (n++).toString(36)) return false;
          continue;
        }
        const expected = prefix + (n++).toString(36);
        const out = Buffer.alloc(s.at + expected.length + 8, 0x2a);
        if (fast.nextLength() !== expected.length) return false;
        const end = fast.writeNext(out, s.at);
        if (end !== s.at + expected.length || out.toString('latin1', s.at, end) !== expected) return false;
        if (out.subarray(0, s.at).some((b) => b !== 0x2a) || out.subarray(end).some((b) => b !== 0x2a)) return false;
      }
      return true;
    }),
    { numRuns: 300 },
  );
});

t.test('ids are ASCII without anything JSON escapes, and two sources never share one', async (t) => {
  const a = new EventIds();
  const b = new EventIds();
  const id = a.next();
  t.match(id, /^evt_[0-9A-Za-z]{10}[0-9a-z]+$/);
  t.equal(JSON.stringify(id), `"${id}"`);
  t.not(a.next().slice(0, 14), b.next().slice(0, 14), 'a random prefix per source');
});
