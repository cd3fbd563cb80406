import assert from 'node:assert/strict';
import t from 'tap';
import fc from 'fast-check';
import type { Rate } from '@s2s/contract';
import { addUsage, usageOf, ZERO_USAGE, type Usage } from '@s2s/core';
import { planSettlement } from '../src/settle.js';

/** decisions.md "Usage and price by modality", written out with BigInt independently of @s2s/core. */
function reference(rate: Rate, u: Usage, preauth: number): number {
  const b = BigInt;
  const anyUsage = Object.values(u).some((v) => v > 0);
  const fee = anyUsage ? b(rate.relay_fee_milli_cents) : 0n;
  const perMinute = b(rate.per_minute) * (b(u.audio_in_ms) + b(u.audio_out_ms)) + b(rate.transcription_per_minute) * b(u.transcribed_ms);
  const tokens =
    b(rate.audio_in_token) * b(u.input_audio_tokens) +
    b(rate.audio_out_token) * b(u.output_audio_tokens) +
    b(rate.text_in_token) * b(u.input_text_tokens) +
    b(rate.text_out_token) * b(u.output_text_tokens) +
    b(rate.cached_in_token) * b(u.cached_input_tokens);
  // milli-cents * 60000, so per_minute * ms / 60000 stays exact; one ceil at the end.
  const scaled = perMinute + 60_000n * (tokens + fee);
  const cents = (scaled + 60_000_000n - 1n) / 60_000_000n;
  return Number(cents < BigInt(preauth) ? cents : BigInt(preauth));
}

const rateArb = fc.record({
  per_minute: fc.nat(2_000_000),
  audio_in_token: fc.nat(10_000),
  audio_out_token: fc.nat(10_000),
  text_in_token: fc.nat(10_000),
  text_out_token: fc.nat(10_000),
  cached_in_token: fc.nat(10_000),
  transcription_per_minute: fc.nat(2_000_000),
  relay_fee_milli_cents: fc.nat(100_000),
});
const sometimes = (max: number) => fc.oneof(fc.constant(0), fc.nat(max));
const usageArb = fc.record({
  audio_in_ms: sometimes(36_000_000),
  audio_out_ms: sometimes(36_000_000),
  input_audio_tokens: sometimes(1_000_000),
  input_text_tokens: sometimes(1_000_000),
  cached_input_tokens: sometimes(1_000_000),
  output_audio_tokens: sometimes(1_000_000),
  output_text_tokens: sometimes(1_000_000),
  transcribed_ms: sometimes(36_000_000),
});

const plan = (rate: Rate, usage: Usage, preauth: number) =>
  planSettlement({ rate, usage, preauthorizedCents: preauth, reservedCents: preauth, terminalStatus: 'completed' });

t.test('billed cents equal the BigInt reference and never exceed the preauthorization', async (t) => {
  fc.assert(
    fc.property(rateArb, usageArb, fc.nat(10_000_000), (rate, usage, preauth) => {
      const p = plan(rate, usage, preauth);
      assert.equal(p.billedCents, reference(rate, usage, preauth));
      assert.ok(p.billedCents <= preauth && p.billedCents >= 0);
      assert.equal(p.releaseCents, preauth);
    }),
    { numRuns: 1000 },
  );
  t.pass('held over 1000 runs');
});

t.test('billing is monotone in usage', async (t) => {
  fc.assert(
    fc.property(rateArb, usageArb, usageArb, fc.nat(10_000_000), (rate, a, extra, preauth) => {
      const b = addUsage(a, extra);
      assert.ok(plan(rate, a, preauth).billedCents <= plan(rate, b, preauth).billedCents);
    }),
    { numRuns: 1000 },
  );
  t.pass('held over 1000 runs');
});

t.test('no usage bills 0', async (t) => {
  fc.assert(
    fc.property(rateArb, fc.nat(10_000), (rate, preauth) => {
      assert.equal(plan(rate, ZERO_USAGE, preauth).billedCents, 0);
    }),
  );
  t.pass('held over 100 runs');
});

t.test('worked example of docs/billing.md', async (t) => {
  // 90 s in + 30 s out at 600 mc/min, 900 + 600 tokens at 2 and 8 mc, 500 mc fee:
  // 1200 + 1800 + 4800 + 500 = 8300 mc -> ceil(8.3) = 9 cents.
  const rate: Rate = {
    per_minute: 600,
    audio_in_token: 2,
    audio_out_token: 8,
    text_in_token: 1,
    text_out_token: 4,
    cached_in_token: 1,
    transcription_per_minute: 300,
    relay_fee_milli_cents: 500,
  };
  const usage = usageOf({ audio_in_ms: 90_000, audio_out_ms: 30_000, input_audio_tokens: 900, output_audio_tokens: 600 });
  t.equal(plan(rate, usage, 100).billedCents, 9);
  t.equal(plan(rate, usage, 7).billedCents, 7);
  t.equal(plan(rate, usageOf({ audio_in_ms: 1 }), 100).billedCents, 1);
  // The voice-agent example: + 1200 text in * 1 + 150 text out * 4 + 2000 cached * 1 + 90 s transcribed at
  // 300 mc/min = 1200 + 600 + 2000 + 450 = 4250 more: 12550 mc -> 13 cents.
  const agent = { ...usage, input_text_tokens: 1200, output_text_tokens: 150, cached_input_tokens: 2000, transcribed_ms: 90_000 };
  t.equal(plan(rate, agent, 100).billedCents, 13);
  // Text only, no audio at all: the relay fee is charged (any usage): 10 * 1 + 1500 = 1510 mc -> 2 cents.
  t.equal(plan({ ...rate, relay_fee_milli_cents: 1500 }, usageOf({ input_text_tokens: 10 }), 100).billedCents, 2);
});
