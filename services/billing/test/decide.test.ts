import { ZERO_USAGE } from '@s2s/core';
import t from 'tap';
import { BACKLOG_FLOOR_MS, decideEnd, isLastDelivery, relayState, retryDelayMs, settledStatus, type EndState } from '../src/decide.js';

const at = (ms: number) => new Date(1_700_000_000_000 + ms);
const base: EndState = {
  settled: false,
  // One attachment not final, on a relay that is gone (the grace applies).
  pending: ['gone'],
  endRequestedAt: at(0),
  liveWaitFrom: at(0),
  now: at(0),
  graceMs: 3000,
  liveMaxWaitMs: 60_000,
  recheckMs: 10_000,
  deliveryCount: 2,
  maxDeliver: 10,
};

t.test('settled sessions are acknowledged, final ones settle at once', async (t) => {
  t.same(decideEnd({ ...base, settled: true, pending: [] }), { action: 'already_settled' });
  t.same(decideEnd({ ...base, pending: [] }), { action: 'settle', reason: 'all_final' });
});

t.test('an attachment not final waits the rest of the grace, in 250 ms steps', async (t) => {
  t.same(decideEnd({ ...base, now: at(100) }), { action: 'wait', delayMs: 3000 });
  t.same(decideEnd({ ...base, now: at(2900) }), { action: 'wait', delayMs: 250 });
  t.same(decideEnd({ ...base, now: at(1000) }), { action: 'wait', delayMs: 2000 });
  t.same(decideEnd({ ...base, now: at(3000) }), { action: 'settle', reason: 'relays_gone' });
  t.same(decideEnd({ ...base, now: at(9000) }), { action: 'settle', reason: 'relays_gone' });
});

t.test('a first delivery behind a backlog still waits a little for the final checkpoint', async (t) => {
  t.same(decideEnd({ ...base, deliveryCount: 1, now: at(60_000) }), { action: 'wait', delayMs: BACKLOG_FLOOR_MS });
  t.same(decideEnd({ ...base, deliveryCount: 1, graceMs: 200, now: at(60_000) }), { action: 'wait', delayMs: 250 });
  t.same(decideEnd({ ...base, deliveryCount: 1, graceMs: 0, now: at(0) }), { action: 'settle', reason: 'relays_gone' });
});

t.test('the last allowed delivery settles instead of waiting', async (t) => {
  t.same(decideEnd({ ...base, deliveryCount: 10, now: at(100) }), { action: 'settle', reason: 'last_delivery' });
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

t.test('the lease rule: no lease is gone, an unexpired one alive, an expired one gone only after a TTL of store uptime', async (t) => {
  t.equal(relayState({ exists: false, unexpired: false }, 0, 10_000), 'gone', 'a clean exit deleted its lease');
  t.equal(relayState({ exists: true, unexpired: true }, 0, 10_000), 'alive');
  t.equal(relayState({ exists: true, unexpired: false }, 60_000, 10_000), 'gone', 'it stopped renewing while the store was up');
  t.equal(relayState({ exists: true, unexpired: false }, 10_000, 10_000), 'gone');
  t.equal(relayState({ exists: true, unexpired: false }, 9_999, 10_000), 'unknown', 'it may have lapsed in the outage billing saw');
  t.equal(relayState({ exists: true, unexpired: false }, 0, 10_000), 'unknown', 'the store is down now');
});

t.test('a live relay is waited for past the grace, looking again every recheck, up to the bound', async (t) => {
  const live: EndState = { ...base, pending: ['alive'] };
  t.same(decideEnd({ ...live, now: at(5000) }), { action: 'wait', delayMs: 10_000 }, 'grace over, relay alive: wait');
  t.same(decideEnd({ ...live, now: at(100) }), { action: 'wait', delayMs: 10_000 });
  t.same(decideEnd({ ...live, now: at(55_000) }), { action: 'wait', delayMs: 5000 }, 'never past the bound');
  t.same(decideEnd({ ...live, now: at(60_000) }), { action: 'settle', reason: 'live_wait_exceeded' });
  t.same(decideEnd({ ...live, pending: ['unknown'], now: at(30_000) }), { action: 'wait', delayMs: 10_000 }, 'unknown waits like alive');
  t.same(
    decideEnd({ ...live, pending: ['gone', 'alive'], now: at(30_000) }),
    { action: 'wait', delayMs: 10_000 },
    'one live relay is enough to wait',
  );
  t.same(decideEnd({ ...live, pending: ['gone', 'gone'], now: at(30_000) }), { action: 'settle', reason: 'relays_gone' });
});

t.test("the bound counts from the later of the announcement and billing's last outage", async (t) => {
  // NATS down 48 s: the end was recorded at 0 but announced (and the bus back) at 50 s.
  const late: EndState = { ...base, pending: ['alive'], liveWaitFrom: at(50_000), deliveryCount: 1 };
  t.same(
    decideEnd({ ...late, now: at(50_200) }),
    { action: 'wait', delayMs: 10_000 },
    'the grace long over, the relay still gets its time',
  );
  t.same(decideEnd({ ...late, now: at(105_000) }), { action: 'wait', delayMs: 5000 });
  t.same(decideEnd({ ...late, now: at(110_000), deliveryCount: 7 }), { action: 'settle', reason: 'live_wait_exceeded' });
});

t.test('deliveries run short: the last but one waits out the whole bound, the last settles', async (t) => {
  const live: EndState = { ...base, pending: ['alive'], maxDeliver: 5 };
  t.same(decideEnd({ ...live, deliveryCount: 3, now: at(20_000) }), { action: 'wait', delayMs: 10_000 });
  t.same(decideEnd({ ...live, deliveryCount: 4, now: at(20_000) }), { action: 'wait', delayMs: 40_000 });
  t.same(decideEnd({ ...live, deliveryCount: 5, now: at(20_000) }), { action: 'settle', reason: 'last_delivery' });
});

t.test('a session settled cancelled whose attachments show accepted input is completed', async (t) => {
  const none = { ...ZERO_USAGE };
  t.equal(settledStatus('cancelled', none), 'cancelled', 'no input: the client ended a ready session');
  t.equal(settledStatus('cancelled', { ...none, audio_in_ms: 7200 }), 'completed', 'the lost activation');
  t.equal(settledStatus('cancelled', { ...none, input_audio_tokens: 1 }), 'completed');
  t.equal(settledStatus('cancelled', { ...none, audio_out_ms: 20 }), 'completed', 'output means an accepted response.create');
  t.equal(settledStatus('expired', { ...none, audio_in_ms: 7200 }), 'expired', 'other statuses stand');
  t.equal(settledStatus('failed', { ...none, audio_in_ms: 7200 }), 'failed');
  t.equal(settledStatus('completed', none), 'completed');
});
