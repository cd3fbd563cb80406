import t from 'tap';
import { BACKLOG_FLOOR_MS, decideEnd, isLastDelivery, retryDelayMs, type EndState } from '../src/decide.js';

const at = (ms: number) => new Date(1_700_000_000_000 + ms);
const base: EndState = {
  settled: false,
  allFinal: false,
  endRequestedAt: at(0),
  now: at(0),
  graceMs: 3000,
  deliveryCount: 2,
  maxDeliver: 10,
};

t.test('settled sessions are acknowledged, final ones settle at once', async (t) => {
  t.same(decideEnd({ ...base, settled: true, allFinal: true }), { action: 'already_settled' });
  t.same(decideEnd({ ...base, allFinal: true }), { action: 'settle' });
});

t.test('an attachment not final waits the rest of the grace, in 250 ms steps', async (t) => {
  t.same(decideEnd({ ...base, now: at(100) }), { action: 'wait', delayMs: 3000 });
  t.same(decideEnd({ ...base, now: at(2900) }), { action: 'wait', delayMs: 250 });
  t.same(decideEnd({ ...base, now: at(1000) }), { action: 'wait', delayMs: 2000 });
  t.same(decideEnd({ ...base, now: at(3000) }), { action: 'settle' });
  t.same(decideEnd({ ...base, now: at(9000) }), { action: 'settle' });
});

t.test('a first delivery behind a backlog still waits a little for the final checkpoint', async (t) => {
  t.same(decideEnd({ ...base, deliveryCount: 1, now: at(60_000) }), { action: 'wait', delayMs: BACKLOG_FLOOR_MS });
  t.same(decideEnd({ ...base, deliveryCount: 1, graceMs: 200, now: at(60_000) }), { action: 'wait', delayMs: 250 });
  t.same(decideEnd({ ...base, deliveryCount: 1, graceMs: 0, now: at(0) }), { action: 'settle' });
});

t.test('the last allowed delivery settles instead of waiting', async (t) => {
  t.same(decideEnd({ ...base, deliveryCount: 10, now: at(100) }), { action: 'settle' });
});

t.test('retry backoff doubles and caps; the last delivery is the max_deliver-th', async (t) => {
  t.same(
    [1, 2, 3, 4, 5, 6].map((n) => retryDelayMs(n, 500, 5000)),
    [500, 1000, 2000, 4000, 5000, 5000],
  );
  t.equal(retryDelayMs(1000, 500, 30_000), 30_000);
  t.notOk(isLastDelivery(9, 10));
  t.ok(isLastDelivery(10, 10));
});
