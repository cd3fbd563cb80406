import assert from 'node:assert/strict';
import t from 'tap';
import fc from 'fast-check';
import type { Rate } from '@s2s/contract';
import type { Usage } from '@s2s/core';
import { planSettlement } from '../src/settle.js';

/** decisions.md "Money", written out with BigInt independently of @s2s/core. */
function reference(rate: Rate, u: Usage, preauth: number): number {
  const audio = BigInt(u.audio_in_ms) + BigInt(u.audio_out_ms);
  const fee = audio > 0n ? BigInt(rate.relay_fee_milli_cents) : 0n;
  const tokens = BigInt(rate.audio_in_token) * BigInt(u.input_audio_tokens) + BigInt(rate.audio_out_token) * BigInt(u.output_audio_tokens);
  // milli-cents * 60000, so per_minute * ms / 60000 stays exact; one ceil at the end.
  const scaled = BigInt(rate.per_minute) * audio + 60_000n * (tokens + fee);
  const cents = (scaled + 60_000_000n - 1n) / 60_000_000n;
  return Number(cents < BigInt(preauth) ? cents : BigInt(preauth));
}

const rateArb = fc.record({
  per_minute: fc.nat(2_000_000),
  audio_in_token: fc.nat(10_000),
  audio_out_token: fc.nat(10_000),
  relay_fee_milli_cents: fc.nat(100_000),
});
const usageArb = fc.record({
  audio_in_ms: fc.nat(36_000_000),
  audio_out_ms: fc.nat(36_000_000),
  input_audio_tokens: fc.nat(1_000_000),
  output_audio_tokens: fc.nat(1_000_000),
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
      const b: Usage = {
        audio_in_ms: a.audio_in_ms + extra.audio_in_ms,
        audio_out_ms: a.audio_out_ms + extra.audio_out_ms,
        input_audio_tokens: a.input_audio_tokens + extra.input_audio_tokens,
        output_audio_tokens: a.output_audio_tokens + extra.output_audio_tokens,
      };
      assert.ok(plan(rate, a, preauth).billedCents <= plan(rate, b, preauth).billedCents);
    }),
    { numRuns: 1000 },
  );
  t.pass('held over 1000 runs');
});

t.test('no usage bills 0', async (t) => {
  fc.assert(
    fc.property(rateArb, fc.nat(10_000), (rate, preauth) => {
      assert.equal(plan(rate, { audio_in_ms: 0, audio_out_ms: 0, input_audio_tokens: 0, output_audio_tokens: 0 }, preauth).billedCents, 0);
    }),
  );
  t.pass('held over 100 runs');
});

t.test('worked example of docs/billing.md', async (t) => {
  // 90 s in + 30 s out at 600 mc/min, 900 + 600 tokens at 2 and 8 mc, 500 mc fee:
  // 1200 + 1800 + 4800 + 500 = 8300 mc -> ceil(8.3) = 9 cents.
  const rate = { per_minute: 600, audio_in_token: 2, audio_out_token: 8, relay_fee_milli_cents: 500 };
  const usage = { audio_in_ms: 90_000, audio_out_ms: 30_000, input_audio_tokens: 900, output_audio_tokens: 600 };
  t.equal(plan(rate, usage, 100).billedCents, 9);
  t.equal(plan(rate, usage, 7).billedCents, 7);
  t.equal(plan(rate, { ...usage, audio_in_ms: 1, audio_out_ms: 0, input_audio_tokens: 0, output_audio_tokens: 0 }, 100).billedCents, 1);
});
