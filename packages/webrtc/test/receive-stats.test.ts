import t from 'tap';
import { ReceiveStats } from '../src/index.js';

t.test('loss by sequence numbers, across the wrap', async (t) => {
  const s = new ReceiveStats();
  for (const seq of [65533, 65534, 65535, 0, 3, 4]) t.ok(s.record(seq, seq * 960, seq * 20));
  t.equal(s.packetsReceived, 6);
  t.equal(s.packetsLost, 2);
  t.notOk(s.record(1, 0, 0), 'a late packet is not decoded');
  t.equal(s.packetsLost, 1, 'and no longer lost');
  t.notOk(s.record(4, 0, 0), 'a duplicate is not decoded');
  t.equal(s.packetsLost, 1);
  t.equal(s.packetsLate, 2);
  t.equal(s.lossRatio, 1 / 7);
});

t.test('RFC 3550 jitter: zero for perfect pacing, the mean deviation otherwise', async (t) => {
  const even = new ReceiveStats();
  for (let i = 0; i < 100; i++) even.record(i, i * 960, i * 20);
  t.equal(even.jitterMs, 0);
  const uneven = new ReceiveStats();
  // Arrivals alternate 5 ms early and late: each transit differs by 10 ms from the previous one.
  for (let i = 0; i < 500; i++) uneven.record(i, i * 960, i * 20 + (i % 2 === 0 ? 5 : -5));
  t.ok(Math.abs(uneven.jitterMs - 10) < 0.1, `jitter ${uneven.jitterMs}`);
});
