// The checkpointer against a fake bus (no I/O): what it publishes, when, and that it gives nothing up.
import t from 'tap';
import type { Bus } from '@s2s/bus';
import type { BusMessage, UsageCheckpoint } from '@s2s/contract';
import { ZERO_USAGE, type Usage } from '@s2s/core';
import { Checkpointer } from '../src/checkpoints.js';
import { testLogger } from './helpers.js';

function fakeBus(fail: () => boolean): { bus: Bus; sent: UsageCheckpoint[] } {
  const sent: UsageCheckpoint[] = [];
  const bus = {
    subjects: { usageCheckpoint: (id: string) => `t.usage.checkpoint.${id}` },
    nc: {
      publish: (_subject: string, data: Uint8Array) => {
        if (fail()) throw new Error('connection closed');
        sent.push({ ...(JSON.parse(new TextDecoder().decode(data)) as UsageCheckpoint), plain: true } as UsageCheckpoint);
      },
    },
    publish: async (_subject: string, message: BusMessage) => {
      if (fail()) throw new Error('bus down');
      sent.push(message as UsageCheckpoint);
      return {};
    },
  } as unknown as Bus;
  return { bus, sent };
}

function source(usage: { current: Usage }) {
  return {
    sessionId: 'vs_1',
    attachmentId: 'att_1',
    usage: () => usage.current,
    routes: () => [{ provider: 'local', provider_model: 'echo-1', ...usage.current }],
  };
}

/** Runs every slice of the interval once. */
function fullInterval(c: Checkpointer): void {
  for (let i = 0; i < 10; i++) c.flush();
}

const tick = () => new Promise((r) => setImmediate(r));

t.test('publishes only when the counters changed, then the final one always', async (t) => {
  const { bus, sent } = fakeBus(() => false);
  const c = new Checkpointer({ bus, relayId: 'r1', logger: testLogger(), intervalMs: 250 });
  const usage = { current: { ...ZERO_USAGE, audio_in_ms: 20 } };
  const ticket = c.track(source(usage));
  c.markDirty(ticket);
  fullInterval(c);
  await tick();
  t.equal(sent.length, 1);
  t.match(sent[0], { seq: 1, audio_in_ms: 20, final: false, relay_id: 'r1' });
  c.markDirty(ticket);
  fullInterval(c);
  await tick();
  t.equal(sent.length, 1, 'same counters: nothing sent');
  usage.current = { ...usage.current, audio_out_ms: 40 };
  c.markDirty(ticket);
  fullInterval(c);
  await tick();
  t.match(sent[1], { seq: 2, audio_out_ms: 40, final: false });
  await c.publishFinal(ticket);
  t.match(sent[2], { seq: 3, audio_in_ms: 20, audio_out_ms: 40, final: true }, 'final even though unchanged');
  c.markDirty(ticket);
  fullInterval(c);
  await tick();
  t.equal(sent.length, 3, 'nothing after the final');
  t.equal(c.pendingFinals, 0);
});

t.test('a failed periodic checkpoint is kept and sent once the bus answers; a final one is retried until it is', async (t) => {
  let down = true;
  const { bus, sent } = fakeBus(() => down);
  let now = 0;
  const c = new Checkpointer({ bus, relayId: 'r1', logger: testLogger(), intervalMs: 250, now: () => now });
  const usage = { current: { ...ZERO_USAGE, audio_in_ms: 100 } };
  const ticket = c.track(source(usage));
  c.markDirty(ticket);
  fullInterval(c);
  await tick();
  t.equal(sent.length, 0);
  now += 10_000;
  down = false;
  fullInterval(c);
  await tick();
  t.match(sent, [{ audio_in_ms: 100, final: false }], 'retried after the outage without a new change');

  down = true;
  usage.current = { ...usage.current, audio_in_ms: 300 };
  const final = c.publishFinal(ticket);
  await new Promise((r) => setTimeout(r, 1000));
  t.equal(c.pendingFinals, 1, 'still pending after several failed tries');
  let idle = false;
  const whenIdle = c.whenIdle().then(() => (idle = true));
  await tick();
  t.notOk(idle, 'whenIdle waits for it');
  down = false;
  await final;
  await whenIdle;
  t.match(sent.at(-1), { audio_in_ms: 300, final: true });
  t.equal(c.pendingFinals, 0);
});

t.test('within a second of an acknowledged checkpoint the next ones go plain, then the counters are confirmed', async (t) => {
  const { bus, sent } = fakeBus(() => false);
  let now = 10_000;
  const c = new Checkpointer({ bus, relayId: 'r1', logger: testLogger(), intervalMs: 250, now: () => now });
  const usage = { current: { ...ZERO_USAGE, audio_in_ms: 250 } };
  const ticket = c.track(source(usage));
  const step = async (ms: number, inMs?: number) => {
    now += ms;
    if (inMs !== undefined) usage.current = { ...usage.current, audio_in_ms: inMs };
    c.markDirty(ticket);
    fullInterval(c);
    await tick();
  };
  await step(0);
  await step(250, 500);
  await step(250, 750);
  await step(250);
  t.same(
    sent.map((m) => [m.audio_in_ms, 'plain' in m]),
    [
      [250, false],
      [500, true],
      [750, true],
    ],
    'one acknowledged, then plain ones while the counters change',
  );
  await step(300);
  t.same(
    sent.at(-1) && [sent.at(-1)?.audio_in_ms, 'plain' in (sent.at(-1) as object)],
    [750, false],
    'unchanged: confirmed by an acknowledged one',
  );
  const n = sent.length;
  await step(2000);
  t.equal(sent.length, n, 'nothing more once confirmed');
});

t.test('audio is published before the next frame like the last would take the unpublished past 250 ms', async (t) => {
  const { bus, sent } = fakeBus(() => false);
  const c = new Checkpointer({ bus, relayId: 'r1', logger: testLogger(), intervalMs: 250 });
  const usage = { current: { ...ZERO_USAGE, audio_in_ms: 100 } };
  const ticket = c.track(source(usage));
  c.markDirty(ticket);
  await tick();
  t.equal(sent.length, 0, '100 ms in 100 ms frames: the tick will send it');
  usage.current = { ...usage.current, audio_in_ms: 200 };
  c.markDirty(ticket);
  await tick();
  t.match(sent, [{ seq: 1, audio_in_ms: 200, final: false }], '200 ms: a third frame would make 300, so published at once');
  t.notOk('plain' in (sent[0] as object), 'acknowledged, not only written');
  // A fast answer in 20 ms deltas: published at 240 ms of output, before a 260th.
  for (let ms = 20; ms <= 220; ms += 20) {
    usage.current = { ...usage.current, audio_out_ms: ms };
    c.markDirty(ticket);
  }
  await tick();
  t.equal(sent.length, 1, '220 ms of output: not yet');
  usage.current = { ...usage.current, audio_out_ms: 240 };
  c.markDirty(ticket);
  await tick();
  t.match(sent[1], { seq: 2, audio_in_ms: 200, audio_out_ms: 240 });
  fullInterval(c);
  await tick();
  t.equal(sent.length, 2, 'the tick has nothing more to send');
  usage.current = { ...usage.current, audio_out_ms: 300 };
  c.markDirty(ticket);
  fullInterval(c);
  await tick();
  t.match(sent[2], { seq: 3, audio_out_ms: 300 }, 'a little new: the tick sends it');
});

t.test('an acknowledged checkpoint in flight does not hold back one that is due: it goes plain beside it', async (t) => {
  const sent: (UsageCheckpoint & { plain?: true })[] = [];
  let release: () => void = () => {};
  const bus = {
    subjects: { usageCheckpoint: (id: string) => `t.usage.checkpoint.${id}` },
    nc: { publish: (_s: string, data: Uint8Array) => sent.push({ ...JSON.parse(new TextDecoder().decode(data)), plain: true }) },
    // The stream's acknowledgement takes as long as the test says (a loaded bus).
    publish: (_s: string, m: BusMessage) => (sent.push(m as UsageCheckpoint), new Promise<object>((r) => (release = () => r({})))),
  } as unknown as Bus;
  const c = new Checkpointer({ bus, relayId: 'r1', logger: testLogger(), intervalMs: 250 });
  const usage = { current: { ...ZERO_USAGE } };
  const ticket = c.track(source(usage));
  for (const ms of [100, 200, 300, 400]) {
    usage.current = { ...usage.current, audio_in_ms: ms };
    c.markDirty(ticket);
    await tick();
  }
  t.same(
    sent.map((m) => [m.seq, m.audio_in_ms, m.plain === true]),
    [
      [1, 200, false],
      [2, 300, true],
    ],
    'at 300 ms the first is still unacknowledged: the second goes plain; at 400 ms nothing is due',
  );
  release();
  await tick();
  usage.current = { ...usage.current, audio_in_ms: 420 };
  fullInterval(c);
  await tick();
  t.equal(sent.length, 3, 'the older acknowledgement does not pass for the newer counters');
  t.match(sent[2], { seq: 3, audio_in_ms: 420 });
});

t.test('attachments due early in one event-loop turn are published together right after it', async (t) => {
  const { bus, sent } = fakeBus(() => false);
  const c = new Checkpointer({ bus, relayId: 'r1', logger: testLogger(), intervalMs: 250 });
  const a = { current: { ...ZERO_USAGE } };
  const b = { current: { ...ZERO_USAGE } };
  const ta = c.track({ ...source(a), attachmentId: 'att_a' });
  const tb = c.track({ ...source(b), attachmentId: 'att_b' });
  a.current = { ...a.current, audio_in_ms: 260 };
  c.markDirty(ta);
  b.current = { ...b.current, audio_out_ms: 300 };
  c.markDirty(tb);
  a.current = { ...a.current, audio_in_ms: 280 };
  c.markDirty(ta);
  t.equal(sent.length, 0, 'nothing written one by one from the frame handlers');
  await tick();
  t.match(
    sent.map((m) => [m.attachment_id, m.audio_in_ms, m.audio_out_ms]),
    [
      ['att_a', 280, 0],
      ['att_b', 0, 300],
    ],
    'one checkpoint each, with the counters at the end of the turn',
  );
});
