import assert from 'node:assert/strict';
import t from 'tap';
import fc from 'fast-check';
import type { UsageCheckpoint } from '@s2s/contract';
import { ZERO_USAGE, addUsage, type Usage } from '@s2s/core';
import { foldCheckpoints } from '../src/fold.js';

/** A session's usage as settlement sums it: the attachments' newest counters added with core's arithmetic. */
const sessionUsage = (attachments: Usage[]): Usage => attachments.reduce((acc, u) => addUsage(acc, u), ZERO_USAGE);
const usageBySession = (folded: Map<string, UsageCheckpoint>) => {
  const out = new Map<string, Usage>();
  for (const c of folded.values()) out.set(c.session_id, addUsage(out.get(c.session_id) ?? ZERO_USAGE, c));
  return out;
};

/** One attachment's checkpoint history as a relay emits it: cumulative counters, seq 1..n, final last. */
const attachmentHistory = (sessionId: string, attachmentId: string) =>
  fc
    .array(
      fc.record({
        audio_in_ms: fc.nat(5000),
        audio_out_ms: fc.nat(5000),
        input_audio_tokens: fc.nat(100),
        output_audio_tokens: fc.nat(100),
      }),
      { minLength: 1, maxLength: 12 },
    )
    .chain((steps) =>
      fc.boolean().map((ended) => {
        const acc = { ...ZERO_USAGE };
        return steps.map((d, i): UsageCheckpoint => {
          acc.audio_in_ms += d.audio_in_ms;
          acc.audio_out_ms += d.audio_out_ms;
          acc.input_audio_tokens += d.input_audio_tokens;
          acc.output_audio_tokens += d.output_audio_tokens;
          return {
            type: 'usage.checkpoint',
            version: 4,
            session_id: sessionId,
            attachment_id: attachmentId,
            relay_id: 'relay-1',
            seq: i + 1,
            ...acc,
            routes: null,
            final: ended && i === steps.length - 1,
            emitted_at: 1_700_000_000_000 + i * 1000,
          };
        });
      }),
    );

const histories = fc
  .tuple(attachmentHistory('vs_a', 'att_1'), attachmentHistory('vs_a', 'att_2'), attachmentHistory('vs_b', 'att_3'))
  .map((hs) => hs);

/** Any permutation of the stream with any message delivered any number of times. */
const delivered = (all: UsageCheckpoint[]) =>
  fc
    .array(fc.nat(all.length - 1), { maxLength: all.length * 2 })
    .chain((dups) => fc.shuffledSubarray([...all, ...dups.map((i) => all[i] as UsageCheckpoint)], { minLength: all.length + dups.length }));

t.test('any permutation or duplication folds to the highest seq of each attachment', async (t) => {
  fc.assert(
    fc.property(
      histories.chain((hs) => fc.tuple(fc.constant(hs), delivered(hs.flat()))),
      ([hs, stream]) => {
        const folded = foldCheckpoints(stream);
        assert.equal(folded.size, 3);
        for (const h of hs) {
          const last = h[h.length - 1] as UsageCheckpoint;
          assert.deepEqual(folded.get(last.attachment_id), last);
        }
        const expectA = sessionUsage([hs[0][hs[0].length - 1]!, hs[1][hs[1].length - 1]!]);
        assert.deepEqual(usageBySession(folded).get('vs_a'), expectA);
      },
    ),
    { numRuns: 200 },
  );
  t.pass('held over 200 runs');
});

t.test('folding in pieces then again equals folding at once (batches are independent)', async (t) => {
  fc.assert(
    fc.property(
      histories.chain((hs) => fc.tuple(delivered(hs.flat()), fc.nat(40))),
      ([stream, cut]) => {
        const at = Math.min(cut, stream.length);
        const first = foldCheckpoints(stream.slice(0, at));
        const second = foldCheckpoints(stream.slice(at));
        const merged = foldCheckpoints([...first.values(), ...second.values()]);
        assert.deepEqual(merged, foldCheckpoints(stream));
      },
    ),
    { numRuns: 200 },
  );
  t.pass('held over 200 runs');
});

t.test('same seq with different content folds to the same winner in any order', async (t) => {
  const base: UsageCheckpoint = {
    type: 'usage.checkpoint',
    version: 4,
    session_id: 'vs_a',
    attachment_id: 'att_1',
    relay_id: 'r',
    seq: 4,
    ...ZERO_USAGE,
    audio_in_ms: 100,
    routes: null,
    final: false,
    emitted_at: 1,
  };
  const other = { ...base, audio_in_ms: 150 };
  t.equal(foldCheckpoints([base, other]).get('att_1')?.audio_in_ms, 150);
  t.equal(foldCheckpoints([other, base]).get('att_1')?.audio_in_ms, 150);
});

t.test('session usage sums attachments; none is zero', async (t) => {
  t.same(sessionUsage([]), {
    audio_in_ms: 0,
    audio_out_ms: 0,
    input_audio_tokens: 0,
    output_audio_tokens: 0,
    input_text_tokens: 0,
    cached_input_tokens: 0,
    output_text_tokens: 0,
    transcribed_ms: 0,
  });
  t.same(
    sessionUsage([
      {
        audio_in_ms: 1,
        audio_out_ms: 2,
        input_audio_tokens: 3,
        output_audio_tokens: 4,
        input_text_tokens: 0,
        cached_input_tokens: 0,
        output_text_tokens: 0,
        transcribed_ms: 0,
      },
      {
        audio_in_ms: 10,
        audio_out_ms: 20,
        input_audio_tokens: 30,
        output_audio_tokens: 40,
        input_text_tokens: 0,
        cached_input_tokens: 0,
        output_text_tokens: 0,
        transcribed_ms: 0,
      },
    ]),
    {
      audio_in_ms: 11,
      audio_out_ms: 22,
      input_audio_tokens: 33,
      output_audio_tokens: 44,
      input_text_tokens: 0,
      cached_input_tokens: 0,
      output_text_tokens: 0,
      transcribed_ms: 0,
    },
  );
});
