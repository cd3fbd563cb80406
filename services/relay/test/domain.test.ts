import fc from 'fast-check';
import t from 'tap';
import { billedCents, ZERO_USAGE, type Usage } from '@s2s/core';
import { Budget } from '../src/domain/budget.js';
import { isNewerAttachment } from '@s2s/core';

t.test('Budget agrees with billedCents', async (t) => {
  const usage = fc.record({
    audio_in_ms: fc.integer({ min: 0, max: 4_000_000 }),
    audio_out_ms: fc.integer({ min: 0, max: 4_000_000 }),
    input_audio_tokens: fc.integer({ min: 0, max: 100_000 }),
    output_audio_tokens: fc.integer({ min: 0, max: 100_000 }),
  });
  const rate = fc.record({
    per_minute: fc.integer({ min: 0, max: 200_000 }),
    audio_in_token: fc.integer({ min: 0, max: 5_000 }),
    audio_out_token: fc.integer({ min: 0, max: 5_000 }),
    relay_fee_milli_cents: fc.integer({ min: 0, max: 100_000 }),
  });
  fc.assert(
    fc.property(
      rate,
      usage,
      usage,
      fc.integer({ min: 1, max: 100_000 }),
      fc.integer({ min: 0, max: 100 }),
      (r, prior, u, preauth, extra) => {
        const total: Usage = {
          audio_in_ms: prior.audio_in_ms + u.audio_in_ms + extra,
          audio_out_ms: prior.audio_out_ms + u.audio_out_ms,
          input_audio_tokens: prior.input_audio_tokens + u.input_audio_tokens,
          output_audio_tokens: prior.output_audio_tokens + u.output_audio_tokens,
        };
        const cents = billedCents(r, total);
        const expected = cents < preauth ? 'under' : cents === preauth ? 'reached' : 'over';
        return new Budget(r, preauth, prior).check(u, extra) === expected;
      },
    ),
    { numRuns: 5000 },
  );
  // At the boundary: 1 cent per 600 ms of audio at per_minute = 100 milli-cents... 100 cents/minute.
  const b = new Budget({ per_minute: 100_000, audio_in_token: 0, audio_out_token: 0, relay_fee_milli_cents: 0 }, 10, ZERO_USAGE);
  t.equal(b.check({ ...ZERO_USAGE, audio_in_ms: 5400 }), 'under');
  t.equal(b.check({ ...ZERO_USAGE, audio_in_ms: 5401 }), 'reached');
  t.equal(b.check({ ...ZERO_USAGE, audio_in_ms: 6000 }), 'reached');
  t.equal(b.check({ ...ZERO_USAGE, audio_in_ms: 6000 }, 1), 'over');
});

t.test('attachment order: started_at, then id as COLLATE "C"', async (t) => {
  t.ok(isNewerAttachment({ startedAtMs: 2, id: 'a' }, { startedAtMs: 1, id: 'z' }));
  t.ok(isNewerAttachment({ startedAtMs: 1, id: 'att_b' }, { startedAtMs: 1, id: 'att_B' }));
  t.notOk(isNewerAttachment({ startedAtMs: 1, id: 'att_B' }, { startedAtMs: 1, id: 'att_b' }));
});
