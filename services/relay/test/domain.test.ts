import fc from 'fast-check';
import t from 'tap';
import type { Rate } from '@s2s/contract';
import { addUsage, billedCents, USAGE_COUNTERS, usageOf, ZERO_USAGE, type Usage } from '@s2s/core';
import { Budget } from '../src/metering/budget.js';
import { isNewerAttachment } from '@s2s/core';

const counter = (max: number) => fc.oneof(fc.constant(0), fc.integer({ min: 0, max }));
const usageArb = fc.record({
  audio_in_ms: counter(4_000_000),
  audio_out_ms: counter(4_000_000),
  input_audio_tokens: counter(100_000),
  input_text_tokens: counter(100_000),
  cached_input_tokens: counter(100_000),
  output_audio_tokens: counter(100_000),
  output_text_tokens: counter(100_000),
  transcribed_ms: counter(4_000_000),
});
const rateArb = fc.record({
  per_minute: fc.integer({ min: 0, max: 200_000 }),
  audio_in_token: fc.integer({ min: 0, max: 5_000 }),
  audio_out_token: fc.integer({ min: 0, max: 5_000 }),
  text_in_token: fc.integer({ min: 0, max: 5_000 }),
  text_out_token: fc.integer({ min: 0, max: 5_000 }),
  cached_in_token: fc.integer({ min: 0, max: 5_000 }),
  transcription_per_minute: fc.integer({ min: 0, max: 200_000 }),
  relay_fee_milli_cents: fc.integer({ min: 0, max: 100_000 }),
});
const NO_RATE: Rate = {
  per_minute: 0,
  audio_in_token: 0,
  audio_out_token: 0,
  text_in_token: 0,
  text_out_token: 0,
  cached_in_token: 0,
  transcription_per_minute: 0,
  relay_fee_milli_cents: 0,
};

/** What the budget must answer: billedCents of the whole session's usage against the preauthorization. */
function expectedState(r: Rate, prior: Usage, u: Usage, preauth: number, extra: number): string {
  const total = addUsage(prior, u);
  total.audio_in_ms += extra;
  const cents = billedCents(r, total);
  return cents < preauth ? 'under' : cents === preauth ? 'reached' : 'over';
}

t.test('Budget agrees with billedCents on every counter', async (t) => {
  fc.assert(
    fc.property(
      rateArb,
      usageArb,
      usageArb,
      fc.integer({ min: 1, max: 100_000 }),
      fc.integer({ min: 0, max: 100 }),
      (r, prior, u, preauth, extra) => {
        return new Budget(r, preauth, prior).check(u, extra) === expectedState(r, prior, u, preauth, extra);
      },
    ),
    { numRuns: 5000 },
  );
  // At the boundary: 1 cent per 600 ms of audio at per_minute = 100 milli-cents... 100 cents/minute.
  const b = new Budget({ ...NO_RATE, per_minute: 100_000 }, 10, ZERO_USAGE);
  t.equal(b.check({ ...ZERO_USAGE, audio_in_ms: 5400 }), 'under');
  t.equal(b.check({ ...ZERO_USAGE, audio_in_ms: 5401 }), 'reached');
  t.equal(b.check({ ...ZERO_USAGE, audio_in_ms: 6000 }), 'reached');
  t.equal(b.check({ ...ZERO_USAGE, audio_in_ms: 6000 }, 1), 'over');
  // Text tokens alone run the budget out: 1 cent per 1000 text tokens at 1 milli-cent each.
  const text = new Budget({ ...NO_RATE, text_out_token: 1 }, 3, usageOf({ output_text_tokens: 1000 }));
  t.equal(text.check(usageOf({ output_text_tokens: 1000 })), 'under');
  t.equal(text.check(usageOf({ output_text_tokens: 1001 })), 'reached');
  t.equal(text.check(usageOf({ output_text_tokens: 2001 })), 'over');
  // So do cached tokens and transcription.
  t.equal(new Budget({ ...NO_RATE, cached_in_token: 1000 }, 2, ZERO_USAGE).check(usageOf({ cached_input_tokens: 2 })), 'reached');
  t.equal(new Budget({ ...NO_RATE, transcription_per_minute: 1000 }, 1, ZERO_USAGE).check(usageOf({ transcribed_ms: 60_001 })), 'over');
});

t.test('one Budget checked frame after frame answers as a fresh one on every check (its per-frame shortcut)', async () => {
  const step = fc.record({
    inMs: fc.integer({ min: 0, max: 40 }),
    outMs: fc.integer({ min: 0, max: 40 }),
    extra: fc.integer({ min: 0, max: 30 }),
    tokens: fc.option(fc.record({ input_audio_tokens: counter(50), output_text_tokens: counter(50), transcribed_ms: counter(500) }), {
      freq: 8,
    }),
  });
  fc.assert(
    fc.property(
      rateArb,
      usageArb.map((u) => ({ ...u, audio_in_ms: u.audio_in_ms % 1000, audio_out_ms: u.audio_out_ms % 1000 })),
      fc.integer({ min: 1, max: 2_000 }),
      fc.array(step, { maxLength: 60 }),
      (r, prior, preauth, steps) => {
        const budget = new Budget(r, preauth, prior);
        let u: Usage = ZERO_USAGE;
        for (const s of steps) {
          u = { ...u, audio_in_ms: u.audio_in_ms + s.inMs, audio_out_ms: u.audio_out_ms + s.outMs };
          if (s.tokens) u = addUsage(u, usageOf(s.tokens));
          if (budget.check(u, s.extra) !== expectedState(r, prior, u, preauth, s.extra)) return false;
          if (budget.check(u) !== expectedState(r, prior, u, preauth, 0)) return false;
        }
        return true;
      },
    ),
    { numRuns: 3000 },
  );
});

t.test('Budget is exact near 2^53 (integer arithmetic, no float screen)', async (t) => {
  const huge = fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 1000 }), fc.integer({ min: 2 ** 40, max: 2 ** 53 - 1 }));
  const hugeRate = fc.record(Object.fromEntries(Object.keys(NO_RATE).map((k) => [k, huge])) as Record<keyof Rate, typeof huge>);
  const hugeUsage = fc.record(Object.fromEntries(USAGE_COUNTERS.map((k) => [k, huge])) as Record<keyof Usage, typeof huge>);
  fc.assert(
    fc.property(
      hugeRate,
      hugeUsage,
      hugeUsage,
      fc.oneof(fc.integer({ min: 1, max: 1000 }), fc.integer({ min: 2 ** 40, max: 2 ** 53 - 1 })),
      (r, prior, u, preauth) => {
        return new Budget(r, preauth, prior).check(u) === expectedState(r, prior, u, preauth, 0);
      },
    ),
    { numRuns: 3000 },
  );
  // A float sum would lose the one scaled unit that decides: 1 cent per ms of audio (per_minute 60e6 milli-cents),
  // plus 1 ms transcribed at 1 milli-cent a minute (1 / 60000 milli-cent), around 2^53 - 1 cents.
  const p = Number.MAX_SAFE_INTEGER;
  const b = new Budget({ ...NO_RATE, per_minute: 60_000_000, transcription_per_minute: 1 }, p, ZERO_USAGE);
  t.equal(b.check(usageOf({ audio_in_ms: p - 1 })), 'under', 'exactly p - 1 cents');
  t.equal(b.check(usageOf({ audio_in_ms: p - 1, transcribed_ms: 1 })), 'reached', 'one 60000th of a milli-cent more');
  t.equal(b.check(usageOf({ audio_in_ms: p })), 'reached', 'exactly p cents');
  t.equal(b.check(usageOf({ audio_in_ms: p, transcribed_ms: 1 })), 'over');
  t.equal(b.check(usageOf({ audio_in_ms: p - 2 }), 1), 'under', 'extra input counted');
  t.equal(b.check(usageOf({ audio_in_ms: p - 1 }), 1), 'reached');
});

t.test('attachment order: started_at, then id as COLLATE "C"', async (t) => {
  t.ok(isNewerAttachment({ startedAtMs: 2, id: 'a' }, { startedAtMs: 1, id: 'z' }));
  t.ok(isNewerAttachment({ startedAtMs: 1, id: 'att_b' }, { startedAtMs: 1, id: 'att_B' }));
  t.notOk(isNewerAttachment({ startedAtMs: 1, id: 'att_B' }, { startedAtMs: 1, id: 'att_b' }));
});
