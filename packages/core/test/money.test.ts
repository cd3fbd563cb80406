import t from 'tap';
import fc from 'fast-check';
import type { Rate } from '@s2s/contract';
import {
  addUsage,
  billedCents,
  hasUsage,
  preauthorizationCents,
  scaledCost,
  scaledCostIfSafe,
  SEED_RATE,
  settledCents,
  USAGE_COUNTERS,
  usageOf,
  ZERO_USAGE,
  type Usage,
} from '../src/money.js';

const rate: Rate = SEED_RATE;
const audioOnly: Rate = { ...rate, text_in_token: 0, text_out_token: 0, cached_in_token: 0, transcription_per_minute: 0 };

/** Exact rationals on BigInt: the formula of decisions.md written term by term, independently of money.ts. */
type Q = { n: bigint; d: bigint };
const q = (n: number | bigint, d: number | bigint = 1n): Q => ({ n: BigInt(n), d: BigInt(d) });
const add = (a: Q, b: Q): Q => ({ n: a.n * b.d + b.n * a.d, d: a.d * b.d });
const mul = (a: Q, b: Q): Q => ({ n: a.n * b.n, d: a.d * b.d });
const ceilQ = (a: Q): bigint => (a.n % a.d === 0n ? a.n / a.d : a.n / a.d + (a.n > 0n ? 1n : 0n));

function reference(r: Rate, u: Usage): bigint {
  const anyUsage = Object.values(u).some((v) => v !== 0);
  const terms: Q[] = [
    mul(q(r.per_minute), q(BigInt(u.audio_in_ms) + BigInt(u.audio_out_ms), 60000)),
    mul(q(r.audio_in_token), q(u.input_audio_tokens)),
    mul(q(r.audio_out_token), q(u.output_audio_tokens)),
    mul(q(r.text_in_token), q(u.input_text_tokens)),
    mul(q(r.text_out_token), q(u.output_text_tokens)),
    mul(q(r.cached_in_token), q(u.cached_input_tokens)),
    mul(q(r.transcription_per_minute), q(u.transcribed_ms, 60000)),
    q(anyUsage ? r.relay_fee_milli_cents : 0),
  ];
  const milliCents = terms.reduce(add, q(0));
  return ceilQ(mul(milliCents, q(1, 1000)));
}

const arbRate = fc.record({
  per_minute: fc.integer({ min: 0, max: 1_000_000 }),
  audio_in_token: fc.integer({ min: 0, max: 10_000 }),
  audio_out_token: fc.integer({ min: 0, max: 10_000 }),
  text_in_token: fc.integer({ min: 0, max: 10_000 }),
  text_out_token: fc.integer({ min: 0, max: 10_000 }),
  cached_in_token: fc.integer({ min: 0, max: 10_000 }),
  transcription_per_minute: fc.integer({ min: 0, max: 1_000_000 }),
  relay_fee_milli_cents: fc.integer({ min: 0, max: 100_000 }),
});
/** Mostly-zero counters too, so the relay-fee rule ("any usage at all") is exercised on each one alone. */
const counter = (max: number) => fc.oneof(fc.constant(0), fc.integer({ min: 0, max }));
const arbUsage = fc.record({
  audio_in_ms: counter(36_000_000),
  audio_out_ms: counter(36_000_000),
  input_audio_tokens: counter(1_000_000),
  input_text_tokens: counter(1_000_000),
  cached_input_tokens: counter(1_000_000),
  output_audio_tokens: counter(1_000_000),
  output_text_tokens: counter(1_000_000),
  transcribed_ms: counter(36_000_000),
});
/** Rates and counters up to 2^53 - 1 (what the API and the database accept): products far past 2^53. */
const huge = fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 1000 }), fc.integer({ min: 2 ** 40, max: Number.MAX_SAFE_INTEGER }));
const arbHugeRate = fc.record(Object.fromEntries(Object.keys(rate).map((k) => [k, huge])) as Record<keyof Rate, typeof huge>);
const arbHugeUsage = fc.record(Object.fromEntries(USAGE_COUNTERS.map((k) => [k, huge])) as Record<keyof Usage, typeof huge>);

t.test('worked examples', async (t) => {
  t.equal(billedCents(rate, ZERO_USAGE), 0, 'no usage bills 0, not even the relay fee');
  // 1 minute in + 1 minute out: 2000 milli + fee 500 = 2500 milli -> 3 cents (rounded up once).
  t.equal(billedCents(rate, usageOf({ audio_in_ms: 60_000, audio_out_ms: 60_000 })), 3);
  // 1 ms of audio: 1000/60000 + 500 = 500.0166 milli -> 1 cent.
  t.equal(billedCents(rate, usageOf({ audio_in_ms: 1 })), 1);
  // tokens: 100 in * 10 + 50 out * 20 = 2000 milli, 6 s of audio = 100 milli, fee 500 -> 2600 -> 3 cents.
  t.equal(billedCents(rate, usageOf({ audio_in_ms: 6000, input_audio_tokens: 100, output_audio_tokens: 50 })), 3);
  // exactly 1000 milli-cents stays 1 cent (no spurious round-up).
  t.equal(
    billedCents(
      { ...audioOnly, per_minute: 0, audio_in_token: 1000, relay_fee_milli_cents: 0 },
      usageOf({ audio_in_ms: 5, input_audio_tokens: 1 }),
    ),
    1,
  );
  // By modality: 300 text in * 2 + 100 text out * 8 + 1000 cached * 1 + 30 s transcribed * 600/min
  // = 600 + 800 + 1000 + 300 = 2700, + fee 500 = 3200 milli -> 4 cents.
  t.equal(
    billedCents(rate, usageOf({ input_text_tokens: 300, output_text_tokens: 100, cached_input_tokens: 1000, transcribed_ms: 30_000 })),
    4,
  );
  // Text alone (no audio at all) still pays the relay fee: 1 token * 2 + 500 = 502 milli -> 1 cent.
  t.equal(billedCents(rate, usageOf({ input_text_tokens: 1 })), 1);
  t.equal(billedCents({ ...rate, relay_fee_milli_cents: 0, text_in_token: 0 }, usageOf({ input_text_tokens: 1 })), 0);
  // Each counter is priced by its own rate and no other.
  for (const [counter, field] of [
    ['input_text_tokens', 'text_in_token'],
    ['output_text_tokens', 'text_out_token'],
    ['cached_input_tokens', 'cached_in_token'],
  ] as const) {
    const only: Rate = { ...usageOfRate(0), [field]: 1000 };
    t.equal(billedCents(only, usageOf({ [counter]: 7 })), 7, `${counter} at ${field}`);
  }
  t.equal(
    billedCents({ ...usageOfRate(0), transcription_per_minute: 1000 }, usageOf({ transcribed_ms: 60_000 })),
    1,
    'transcribed_ms per minute',
  );
  t.equal(billedCents({ ...usageOfRate(0), transcription_per_minute: 1000 }, usageOf({ audio_in_ms: 60_000 })), 0, 'not on audio_in_ms');
});

function usageOfRate(v: number): Rate {
  return Object.fromEntries(Object.keys(rate).map((k) => [k, v])) as Rate;
}

t.test('matches the BigInt reference', async (t) => {
  fc.assert(
    fc.property(arbRate, arbUsage, (r, u) => BigInt(billedCents(r, u)) === reference(r, u)),
    { numRuns: 2000 },
  );
  t.pass('property held');
});

t.test('stays exact with rates and counters near 2^53', async (t) => {
  fc.assert(
    fc.property(arbHugeRate, arbHugeUsage, (r, u) => {
      const cents = reference(r, u);
      const scaled = scaledCost(r, u);
      const fast = scaledCostIfSafe(r, u);
      // billedCents is a number: exact whenever the bill itself is a safe integer (the database caps it there).
      const billOk = cents > BigInt(Number.MAX_SAFE_INTEGER) || BigInt(billedCents(r, u)) === cents;
      return billOk && (scaled + 59_999_999n) / 60_000_000n === cents && (fast === null || BigInt(fast) === scaled);
    }),
    { numRuns: 2000 },
  );
  // One that float arithmetic gets wrong: 2^53 - 1 ms at 1 milli-cent a minute, plus 1 token at 1 milli-cent.
  const r: Rate = { ...usageOfRate(0), per_minute: 1, audio_in_token: 1 };
  const u = usageOf({ audio_in_ms: Number.MAX_SAFE_INTEGER, input_audio_tokens: 1 });
  t.equal(scaledCostIfSafe(r, u), null, 'past 2^53 the number path declines');
  t.equal(scaledCost(r, u), BigInt(Number.MAX_SAFE_INTEGER) + 60_000n);
  t.equal(BigInt(billedCents(r, u)), reference(r, u));
  t.equal(scaledCostIfSafe(r, usageOf({ audio_in_ms: 2 ** 52 })), 2 ** 52, 'below 2^53 it answers, exactly');
});

t.test('the number path agrees with the BigInt one wherever it answers', async (t) => {
  fc.assert(
    fc.property(arbRate, arbUsage, (r, u) => {
      const fast = scaledCostIfSafe(r, u);
      return fast === null || BigInt(fast) === scaledCost(r, u);
    }),
    { numRuns: 2000 },
  );
  t.pass('property held');
});

t.test('is monotone in every usage counter', async (t) => {
  fc.assert(
    fc.property(arbRate, arbUsage, fc.constantFrom(...USAGE_COUNTERS), fc.integer({ min: 1, max: 100_000 }), (r, u, k, d) => {
      return billedCents(r, { ...u, [k]: u[k] + d }) >= billedCents(r, u);
    }),
  );
  t.pass('property held');
});

t.test('addUsage adds every counter; hasUsage sees any one', async (t) => {
  fc.assert(
    fc.property(arbUsage, arbUsage, (a, b) => {
      const s = addUsage(a, b);
      return USAGE_COUNTERS.every((k) => s[k] === a[k] + b[k]) && hasUsage(s) === (hasUsage(a) || hasUsage(b));
    }),
  );
  for (const k of USAGE_COUNTERS) t.ok(hasUsage(usageOf({ [k]: 1 })), k);
  t.notOk(hasUsage(ZERO_USAGE));
  t.same(Object.keys(ZERO_USAGE).sort(), [...USAGE_COUNTERS].sort(), 'ZERO_USAGE has every counter');
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
  t.equal(preauthorizationCents(usageOfRate(0), 10), 1);
  fc.assert(
    fc.property(arbRate, fc.integer({ min: 1, max: 120 }), (r, m) => {
      const p = preauthorizationCents(r, m);
      const half = (m * 60_000) / 2;
      const covered = billedCents(
        r,
        usageOf({ audio_in_ms: half, audio_out_ms: half, input_audio_tokens: half / 100, output_audio_tokens: half / 50 }),
      );
      return p >= 1 && p === preauthorizationCents(r, m) && p >= covered;
    }),
  );
});
