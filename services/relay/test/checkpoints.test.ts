// The checkpointer against a fake bus (no I/O): what it publishes, when, and that it gives nothing up.
import t from 'tap';
import { decodeMessage, type Bus } from '@s2s/bus';
import { compactRoutes, type CheckpointRoute, type UsageCheckpoint } from '@s2s/contract';
import { ZERO_USAGE, type Usage } from '@s2s/core';
import { Checkpointer } from '../src/metering/checkpoints.js';
import { testLogger } from './helpers.js';

/** What a relay put on the wire, read as billing reads it: a valid checkpoint on its session's subject. */
function received(subject: string, data: string): UsageCheckpoint {
  const decoded = decodeMessage(new TextEncoder().encode(data));
  if (!decoded.ok || decoded.message.type !== 'usage.checkpoint') throw new Error(`not a checkpoint: ${data}`);
  if (subject !== `t.usage.checkpoint.${decoded.message.session_id}`) throw new Error(`on ${subject}`);
  return decoded.message;
}

function fakeBus(fail: () => boolean): { bus: Bus; sent: UsageCheckpoint[] } {
  const sent: UsageCheckpoint[] = [];
  const bus = {
    subjects: { usageCheckpoint: (id: string) => `t.usage.checkpoint.${id}` },
    nc: {
      publish: (subject: string, data: string) => {
        if (fail()) throw new Error('connection closed');
        sent.push({ ...received(subject, data), plain: true } as UsageCheckpoint);
      },
    },
    publishAcked: async (subject: string, data: string, msgId: string) => {
      if (fail()) throw new Error('bus down');
      const m = received(subject, data);
      if (msgId !== `${m.attachment_id}:${m.seq}`) throw new Error(`Msg-Id ${msgId}`);
      sent.push(m);
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
    nc: { publish: (s: string, data: string) => sent.push({ ...received(s, data), plain: true }) },
    // The stream's acknowledgement takes as long as the test says (a loaded bus).
    publishAcked: (s: string, data: string) => (sent.push(received(s, data)), new Promise<object>((r) => (release = () => r({})))),
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

t.test("a checkpoint's JSON is what JSON.stringify of its version 4 message gives, whatever its ids and routes", async (t) => {
  const payloads: string[] = [];
  const bus = {
    subjects: { usageCheckpoint: (id: string) => `t.usage.checkpoint.${id}` },
    nc: { publish: (_subject: string, data: string) => void payloads.push(data) },
    publishAcked: async (_subject: string, data: string) => void payloads.push(data),
  } as unknown as Bus;
  const relayId = 'relay "1" \\ é';
  const c = new Checkpointer({ bus, relayId, logger: testLogger(), intervalMs: 250, now: () => 0 });
  const usage: Usage = {
    audio_in_ms: 1,
    audio_out_ms: 2,
    input_audio_tokens: 3,
    input_text_tokens: 4,
    cached_input_tokens: 5,
    output_audio_tokens: 6,
    output_text_tokens: 7,
    transcribed_ms: 8,
  };
  const a = { provider: 'local', provider_model: 'echo-1', ...usage };
  const splits: CheckpointRoute[][] = [
    [a],
    [a],
    [{ ...a, provider_model: 'echo-2' }],
    [
      { ...a, audio_in_ms: 0, transcribed_ms: 3 },
      { ...ZERO_USAGE, provider: 'azure', provider_model: 'dep "x"', audio_in_ms: 1, transcribed_ms: 5 },
    ],
    [],
  ];
  let routes = splits[0]!;
  const ticket = c.track({ sessionId: 'vs_"1"\n', attachmentId: 'att_\u2028', usage: () => usage, routes: () => routes });
  // One attachment's checkpoints one after the other (its single route's JSON is reused while it stays).
  for (const [i, split] of splits.entries()) {
    routes = split;
    await c.publishFinal(ticket);
    const sent = payloads[payloads.length - 1]!;
    const expected: UsageCheckpoint = {
      type: 'usage.checkpoint',
      version: 4,
      session_id: 'vs_"1"\n',
      attachment_id: 'att_\u2028',
      relay_id: relayId,
      seq: i + 1,
      ...usage,
      routes: compactRoutes(split),
      final: true,
      emitted_at: (JSON.parse(sent) as UsageCheckpoint).emitted_at,
    };
    t.equal(sent, JSON.stringify(expected), `split ${i}`);
  }
});

t.test('while audio streams, an early checkpoint stands for its tick: about four a second, each change within an interval', async (t) => {
  const { bus, sent } = fakeBus(() => false);
  let now = 10_000;
  const c = new Checkpointer({ bus, relayId: 'r1', logger: testLogger(), intervalMs: 250, now: () => now });
  const usage = { current: { ...ZERO_USAGE } };
  const ticket = c.track(source(usage));
  const published = () => (sent.at(-1) as UsageCheckpoint | undefined) ?? { ...ZERO_USAGE, seq: 0 };
  let streamed = 0;
  let tokenAt = -1;
  // Two seconds of 20 ms frames in, each answered by 20 ms out 5 ms later, then a token count alone; 5 ms steps, a tick
  // every 25 ms (10 per interval), the end of each step's event-loop turn.
  for (let ms = 5; ms <= 2500; ms += 5) {
    now += 5;
    const change = (u: Partial<typeof usage.current>) => {
      usage.current = { ...usage.current, ...u };
      c.markDirty(ticket, usage.current);
    };
    if (ms <= 2000 && ms % 20 === 0) change({ audio_in_ms: usage.current.audio_in_ms + 20 });
    if (ms <= 1985 && ms % 20 === 5) change({ audio_out_ms: usage.current.audio_out_ms + 20 });
    if (ms === 2010) {
      streamed = sent.length;
      change({ output_audio_tokens: 7 });
      tokenAt = ms;
    }
    if (ms % 25 === 0) c.flush();
    await tick();
    const p = published();
    if (usage.current.audio_in_ms - p.audio_in_ms > 250 || usage.current.audio_out_ms - p.audio_out_ms > 250) {
      t.fail(`at ${ms} ms more than 250 ms unpublished: ${JSON.stringify(p)}`);
    }
    if (tokenAt >= 0 && p.output_audio_tokens === 7) {
      t.ok(ms - tokenAt <= 275, `the token count is published ${ms - tokenAt} ms after it (at most an interval and a tick)`);
      tokenAt = -1;
    }
  }
  t.equal(tokenAt, -1, 'the token count was published');
  t.match(published(), { audio_in_ms: 2000, audio_out_ms: 2000, output_audio_tokens: 7 }, 'everything published in the end');
  t.ok(streamed <= 10, `${streamed} checkpoints in 2 s of streaming (with a tick a frame after each early one: 15-16)`);
  t.ok(streamed >= 8, 'at least one every 250 ms');
});
