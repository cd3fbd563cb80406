import t from 'tap';
import fc from 'fast-check';
import type { Rate } from '@s2s/contract';
import { billedCents, preauthorizationCents, settledCents, type Usage } from '../src/money.js';

const rate: Rate = { per_minute: 1000, audio_in_token: 10, audio_out_token: 20, relay_fee_milli_cents: 500 };

/** An independent reference: exact rational arithmetic on BigInt, written the way decisions.md states it. */
function reference(r: Rate, u: Usage): bigint {
  const ms = BigInt(u.audio_in_ms + u.audio_out_ms);
  if (ms === 0n && u.input_audio_tokens === 0 && u.output_audio_tokens === 0) return 0n;
  const fee = ms > 0n ? BigInt(r.relay_fee_milli_cents) : 0n;
  // total milli-cents = num / 60000
  const num =
    BigInt(r.per_minute) * ms +
    60000n * (BigInt(r.audio_in_token) * BigInt(u.input_audio_tokens) + BigInt(r.audio_out_token) * BigInt(u.output_audio_tokens) + fee);
  const den = 60000n * 1000n;
  return num % den === 0n ? num / den : num / den + 1n;
}

const arbRate = fc.record({
  per_minute: fc.integer({ min: 0, max: 1_000_000 }),
  audio_in_token: fc.integer({ min: 0, max: 10_000 }),
  audio_out_token: fc.integer({ min: 0, max: 10_000 }),
  relay_fee_milli_cents: fc.integer({ min: 0, max: 100_000 }),
});
const arbUsage = fc.record({
  audio_in_ms: fc.integer({ min: 0, max: 36_000_000 }),
  audio_out_ms: fc.integer({ min: 0, max: 36_000_000 }),
  input_audio_tokens: fc.integer({ min: 0, max: 1_000_000 }),
  output_audio_tokens: fc.integer({ min: 0, max: 1_000_000 }),
});

t.test('worked examples', async (t) => {
  const none = { audio_in_ms: 0, audio_out_ms: 0, input_audio_tokens: 0, output_audio_tokens: 0 };
  t.equal(billedCents(rate, none), 0, 'no usage bills 0, not even the relay fee');
  // 1 minute in + 1 minute out: 2000 milli + fee 500 = 2500 milli -> 3 cents (rounded up once).
  t.equal(billedCents(rate, { ...none, audio_in_ms: 60_000, audio_out_ms: 60_000 }), 3);
  // 1 ms of audio: 1000/60000 + 500 = 500.0166 milli -> 1 cent.
  t.equal(billedCents(rate, { ...none, audio_in_ms: 1 }), 1);
  // tokens: 100 in * 10 + 50 out * 20 = 2000 milli, 6 s of audio = 100 milli, fee 500 -> 2600 -> 3 cents.
  t.equal(billedCents(rate, { audio_in_ms: 6000, audio_out_ms: 0, input_audio_tokens: 100, output_audio_tokens: 50 }), 3);
  // exactly 1000 milli-cents stays 1 cent (no spurious round-up).
  t.equal(
    billedCents(
      { per_minute: 0, audio_in_token: 1000, audio_out_token: 0, relay_fee_milli_cents: 0 },
      { ...none, audio_in_ms: 5, input_audio_tokens: 1 },
    ),
    1,
  );
});

t.test('matches the BigInt reference', async (t) => {
  fc.assert(fc.property(arbRate, arbUsage, (r, u) => BigInt(billedCents(r, u)) === reference(r, u)));
  t.pass('property held');
});

t.test('is monotone in every usage counter', async (t) => {
  const keys = ['audio_in_ms', 'audio_out_ms', 'input_audio_tokens', 'output_audio_tokens'] as const;
  fc.assert(
    fc.property(arbRate, arbUsage, fc.constantFrom(...keys), fc.integer({ min: 1, max: 100_000 }), (r, u, k, d) => {
      return billedCents(r, { ...u, [k]: u[k] + d }) >= billedCents(r, u);
    }),
  );
  t.pass('property held');
});

t.test('settlement never exceeds the preauthorization', async (t) => {
  fc.assert(
    fc.property(arbRate, arbUsage, fc.integer({ min: 1, max: 10_000_000 }), (r, u, p) => {
      const s = settledCents(r, u, p);
      return s <= p && s === Math.min(billedCents(r, u), p);
    }),
  );
  t.pass('property held');
});

t.test('preauthorization is deterministic, at least 1 cent, and covers its minutes', async (t) => {
  t.equal(preauthorizationCents(rate, 10), 161, '10 min: 10000 + 30000 + 120000 + 500 milli -> 161 cents');
  t.equal(preauthorizationCents({ per_minute: 0, audio_in_token: 0, audio_out_token: 0, relay_fee_milli_cents: 0 }, 10), 1);
  fc.assert(
    fc.property(arbRate, fc.integer({ min: 1, max: 120 }), (r, m) => {
      const p = preauthorizationCents(r, m);
      const half = (m * 60_000) / 2;
      const covered = billedCents(r, {
        audio_in_ms: half,
        audio_out_ms: half,
        input_audio_tokens: half / 100,
        output_audio_tokens: half / 50,
      });
      return p >= 1 && p === preauthorizationCents(r, m) && p >= covered;
    }),
  );
});
