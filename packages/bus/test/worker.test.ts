// The generic JetStream worker with fake messages and a fake source: no broker, no database.
import t from 'tap';
import { createHeaders } from '../src/index.js';
import { isRetryableError, retryDelayMs, verdictFor } from '../src/verdict.js';
import { createWorker, type Handlers, type MessageSource, type WorkerMsg, type WorkerOptions } from '../src/worker.js';

type Answer = { ack: true } | { nak: number | undefined } | { term: true };

class FakeMsg implements WorkerMsg {
  readonly answers: Answer[] = [];
  workingCalls = 0;
  readonly info: { deliveryCount: number; timestampNanos: number; stream: string };
  readonly headers = createHeaders();
  constructor(
    readonly subject: string,
    readonly payload: string,
    readonly seq: number,
    deliveryCount = 1,
  ) {
    this.info = { deliveryCount, timestampNanos: 0, stream: 'S' };
    this.headers.set('Nats-Msg-Id', `id-${seq}`);
  }
  get data() {
    return new TextEncoder().encode(this.payload);
  }
  ack() {
    this.answers.push({ ack: true });
  }
  nak(millis?: number) {
    this.answers.push({ nak: millis });
  }
  term() {
    this.answers.push({ term: true });
  }
  working() {
    this.workingCalls++;
  }
}

class FakeSource implements MessageSource {
  private push?: (m: WorkerMsg) => void;
  stopped = false;
  async start(onMessage: (m: WorkerMsg) => void) {
    this.push = onMessage;
  }
  async stop() {
    this.stopped = true;
  }
  deliver(...msgs: FakeMsg[]) {
    for (const m of msgs) this.push?.(m);
  }
}

type V = { kind: 'num'; n: number } | { kind: 'word'; w: string };

class Outage extends Error {
  readonly retryable = true;
}
class Permanent extends Error {
  readonly retryable = false;
}

const silent = { warn: () => undefined, error: () => undefined };

function decode(m: WorkerMsg) {
  const text = new TextDecoder().decode(m.data);
  if (m.subject === 'foreign') return { ok: false as const, answer: 'ack' as const };
  if (text === 'garbage') return { ok: false as const, answer: 'dead_letter' as const, reason: 'malformed' };
  const n = Number(text);
  return { ok: true as const, value: Number.isNaN(n) ? ({ kind: 'word', w: text } as const) : ({ kind: 'num', n } as const) };
}

function setup(handlers: Handlers<V>, overrides: Partial<WorkerOptions<V>> = {}) {
  const source = new FakeSource();
  const deadLetters: { msg: WorkerMsg; reason: string }[] = [];
  const sleeps: number[] = [];
  const worker = createWorker<V>({
    source,
    decode,
    handlers,
    deadLetter: async (msg, reason) => {
      deadLetters.push({ msg, reason });
    },
    batchSize: 10,
    ackWaitMs: 3000,
    maxDeliver: 3,
    nakBaseMs: 100,
    nakMaxMs: 1000,
    isOutage: (err) => err instanceof Outage,
    log: silent,
    sleep: async (ms) => {
      sleeps.push(ms);
    },
    ...overrides,
  });
  return { source, worker, deadLetters, sleeps };
}

async function until(check: () => boolean) {
  for (let i = 0; i < 200 && !check(); i++) await new Promise((r) => setImmediate(r));
  if (!check()) throw new Error('condition not reached');
}

const okWords = { each: async () => ({ kind: 'ack' as const }), concurrency: 2 };

t.test('the mapper: ack, wait, retry with backoff, dead-letter on the last delivery or when not retryable', async (t) => {
  const policy = { maxDeliver: 4, nakBaseMs: 100, nakMaxMs: 250 };
  t.same(verdictFor({ kind: 'ack' }, 1, policy), { action: 'ack' });
  t.same(verdictFor({ kind: 'wait', delayMs: 750 }, 9, policy), { action: 'nak', delayMs: 750, retry: false });
  const fail = (err: unknown) => ({ kind: 'fail' as const, err, reason: 'r' });
  t.same(verdictFor(fail(new Error('x')), 1, policy), { action: 'nak', delayMs: 100, retry: true });
  t.same(verdictFor(fail(new Error('x')), 2, policy), { action: 'nak', delayMs: 200, retry: true });
  t.same(verdictFor(fail(new Error('x')), 3, policy), { action: 'nak', delayMs: 250, retry: true });
  t.same(verdictFor(fail(new Error('x')), 4, policy), { action: 'dead_letter', reason: 'r' });
  t.same(verdictFor(fail(new Permanent('no')), 1, policy), { action: 'dead_letter', reason: 'r' });
  t.same(verdictFor(fail(new Outage('yes')), 1, policy), { action: 'nak', delayMs: 100, retry: true });
  t.equal(isRetryableError(new Error('unexpected')), true, 'an unexpected error is retried');
  t.equal(isRetryableError({ retryable: false }), false);
  t.same(
    [1, 2, 3, 4, 5, 6].map((n) => retryDelayMs(n, 500, 5000)),
    [500, 1000, 2000, 4000, 5000, 5000],
  );
});

t.test('a batch handler gets every item of its kind at once; outcomes become acks and naks', async (t) => {
  const seen: number[][] = [];
  const { source, worker } = setup({
    num: {
      batch: async (items) => {
        seen.push(items.map((i) => i.value.n));
        return items.map((i) => (i.value.n === 2 ? { kind: 'wait', delayMs: 500 } : { kind: 'ack' }));
      },
    },
    word: okWords,
  });
  await worker.start();
  const msgs = [new FakeMsg('s', '1', 1), new FakeMsg('s', '2', 2), new FakeMsg('s', 'hi', 3), new FakeMsg('foreign', '9', 4)];
  source.deliver(...msgs);
  await until(() => msgs.every((m) => m.answers.length > 0));
  await worker.stop();
  t.same(seen, [[1, 2]]);
  t.same(
    msgs.map((m) => m.answers),
    [[{ ack: true }], [{ nak: 500 }], [{ ack: true }], [{ ack: true }]],
  );
  t.match(worker.stats, { received: 4, batches: 1, waited: 1, retried: 0, deadLettered: 0 });
});

t.test('a malformed message is dead-lettered at once with its reason, then terminated', async (t) => {
  const { source, worker, deadLetters } = setup({ num: { batch: async (items) => items.map(() => ({ kind: 'ack' })) }, word: okWords });
  await worker.start();
  const bad = new FakeMsg('s', 'garbage', 7);
  source.deliver(bad);
  await until(() => bad.answers.length > 0);
  await worker.stop();
  t.same(bad.answers, [{ term: true }]);
  t.equal(deadLetters.length, 1);
  t.equal(deadLetters[0]?.reason, 'malformed');
  t.equal(deadLetters[0]?.msg, bad);
  t.equal(worker.stats.deadLettered, 1);
});

t.test('a failing batch is retried one item at a time: the poison item is retried, then dead-lettered, the others acked', async (t) => {
  const calls: number[][] = [];
  const { source, worker, deadLetters } = setup({
    num: {
      batch: async (items) => {
        calls.push(items.map((i) => i.value.n));
        if (items.some((i) => i.value.n === 13)) throw new Error('poison');
        return items.map(() => ({ kind: 'ack' }));
      },
    },
    word: okWords,
  });
  await worker.start();
  const first = [new FakeMsg('s', '1', 1), new FakeMsg('s', '13', 2), new FakeMsg('s', '3', 3)];
  source.deliver(...first);
  await until(() => first.every((m) => m.answers.length > 0));
  t.same(calls, [[1, 13, 3], [1], [13], [3]]);
  t.same(
    first.map((m) => m.answers),
    [[{ ack: true }], [{ nak: 100 }], [{ ack: true }]],
    'first delivery: retried after the base delay',
  );
  const last = new FakeMsg('s', '13', 2, 3);
  source.deliver(last);
  await until(() => last.answers.length > 0);
  await worker.stop();
  t.same(last.answers, [{ term: true }], 'on the last delivery it is dead-lettered');
  t.equal(deadLetters.length, 1);
  t.match(worker.stats, { retried: 1, deadLettered: 1 });
});

t.test('a permanent error is dead-lettered on its first delivery', async (t) => {
  const { source, worker } = setup({
    num: { batch: async () => [{ kind: 'ack' }] },
    word: { each: async () => ({ kind: 'fail', err: new Permanent('never'), reason: 'bad word' }), concurrency: 1 },
  });
  await worker.start();
  const m = new FakeMsg('s', 'oops', 1);
  source.deliver(m);
  await until(() => m.answers.length > 0);
  await worker.stop();
  t.same(m.answers, [{ term: true }]);
});

t.test('an outage holds the batch: messages kept in progress, no delivery burnt, then handled', async (t) => {
  let down = 3;
  const { source, worker, sleeps } = setup({
    num: {
      batch: async (items) => {
        if (down-- > 0) throw new Outage('store down');
        return items.map(() => ({ kind: 'ack' }));
      },
    },
    word: okWords,
  });
  await worker.start();
  const msgs = [new FakeMsg('s', '1', 1), new FakeMsg('s', '2', 2)];
  source.deliver(...msgs);
  await until(() => msgs.every((m) => m.answers.length > 0));
  await worker.stop();
  t.same(
    msgs.map((m) => m.answers),
    [[{ ack: true }], [{ ack: true }]],
    'acked once the store is back, never naked',
  );
  t.same(
    msgs.map((m) => m.workingCalls),
    [3, 3],
    'marked in progress at every failed attempt',
  );
  t.same(sleeps, [100, 200, 400], 'backing off');
  t.match(worker.stats, { held: 3, retried: 0, deadLettered: 0 });
});

t.test('an outage in a per-message handler holds only that call and keeps the order of answers per message', async (t) => {
  let failures = 2;
  const handled: string[] = [];
  const { source, worker } = setup({
    num: { batch: async (items) => items.map(() => ({ kind: 'ack' })) },
    word: {
      each: async (item) => {
        if (item.value.w === 'flaky' && failures-- > 0) throw new Outage('down');
        handled.push(item.value.w);
        return { kind: 'ack' };
      },
      concurrency: 2,
    },
  });
  await worker.start();
  const msgs = [new FakeMsg('s', 'flaky', 1), new FakeMsg('s', 'fine', 2)];
  source.deliver(...msgs);
  await until(() => msgs.every((m) => m.answers.length > 0));
  await worker.stop();
  t.same(handled.sort(), ['fine', 'flaky']);
  t.same(
    msgs.map((m) => m.answers),
    [[{ ack: true }], [{ ack: true }]],
  );
  t.equal(msgs[0]?.workingCalls, 2);
});

t.test('stopping during an outage hands back every unanswered message at once', async (t) => {
  const { source, worker } = setup(
    {
      num: {
        batch: async () => {
          throw new Outage('down for good');
        },
      },
      word: okWords,
    },
    {
      // The stop arrives while the worker waits out the outage.
      sleep: async () => {
        await stopping;
      },
    },
  );
  let stopNow: () => void = () => undefined;
  const stopping = new Promise<void>((r) => (stopNow = r));
  await worker.start();
  const msgs = [new FakeMsg('s', '1', 1), new FakeMsg('s', '2', 2)];
  source.deliver(...msgs);
  await until(() => msgs[0]!.workingCalls > 0);
  const stopped = worker.stop();
  stopNow();
  await stopped;
  t.ok(source.stopped, 'the source stopped pulling');
  t.same(
    msgs.map((m) => m.answers),
    [[{ nak: undefined }], [{ nak: undefined }]],
    'handed back without delay',
  );
});

t.test('a dead-letter copy that fails leaves the message to a redelivery', async (t) => {
  const { source, worker } = setup(
    { num: { batch: async (items) => items.map(() => ({ kind: 'ack' })) }, word: okWords },
    {
      deadLetter: async () => {
        throw new Error('broker down');
      },
    },
  );
  await worker.start();
  const bad = new FakeMsg('s', 'garbage', 1, 2);
  source.deliver(bad);
  await until(() => bad.answers.length > 0);
  await worker.stop();
  t.same(bad.answers, [{ nak: 200 }], 'naked with backoff, never terminated uncopied');
  t.equal(worker.stats.deadLettered, 0);
});

t.test('batches are at most batchSize messages, in arrival order', async (t) => {
  const sizes: number[] = [];
  const { source, worker } = setup(
    {
      num: {
        batch: async (items) => {
          sizes.push(items.length);
          return items.map(() => ({ kind: 'ack' }));
        },
      },
      word: okWords,
    },
    { batchSize: 4 },
  );
  const msgs = Array.from({ length: 10 }, (_, i) => new FakeMsg('s', String(i), i + 1));
  await worker.start();
  source.deliver(...msgs);
  await until(() => msgs.every((m) => m.answers.length > 0));
  await worker.stop();
  t.same(sizes, [4, 4, 2]);
});

t.test('messages are decoded as they arrive; a decoder that throws fails its message alone, retried with backoff', async (t) => {
  const decodedAt: number[] = [];
  let handled = 0;
  const { source, worker } = setup(
    {
      num: {
        batch: async (items) => {
          handled += items.length;
          return items.map(() => ({ kind: 'ack' as const }));
        },
      },
      word: okWords,
    },
    {
      decode: (m) => {
        decodedAt.push(m.seq);
        if (new TextDecoder().decode(m.data) === 'boom') throw new Error('decoder bug');
        return decode(m);
      },
    },
  );
  await worker.start();
  const msgs = [new FakeMsg('s', '1', 1), new FakeMsg('s', 'boom', 2), new FakeMsg('s', '3', 3)];
  source.deliver(...msgs);
  t.same(decodedAt, [1, 2, 3], 'decoded on delivery, before any batch ran');
  await until(() => msgs.every((m) => m.answers.length > 0));
  await worker.stop();
  t.same(msgs[0]?.answers, [{ ack: true }]);
  t.same(msgs[1]?.answers, [{ nak: 100 }], 'the throwing one is retried after the base delay');
  t.same(msgs[2]?.answers, [{ ack: true }]);
  t.equal(handled, 2);
});

t.test('the acks of a big batch go out in slices after its handler; stop sends whatever is left', async (t) => {
  let handled = false;
  const { source, worker } = setup(
    {
      num: {
        batch: async (items) => {
          handled = true;
          return items.map(() => ({ kind: 'ack' as const }));
        },
      },
      word: okWords,
    },
    { batchSize: 5000 },
  );
  await worker.start();
  const msgs = Array.from({ length: 5000 }, (_, i) => new FakeMsg('s', String(i), i + 1));
  source.deliver(...msgs);
  await until(() => handled);
  await new Promise((r) => setImmediate(r));
  const early = msgs.filter((m) => m.answers.length > 0).length;
  t.ok(early < msgs.length, `not all at once (${early} after one turn)`);
  await worker.stop();
  t.ok(
    msgs.every((m) => m.answers.length === 1 && 'ack' in (m.answers[0] as Answer)),
    'every message acknowledged exactly once by the time stop returns',
  );
});

/** Handlers that record each `num` batch's values and ack every item. */
function recordingBatches(batches: number[][]): Parameters<typeof setup>[0] {
  return {
    num: {
      batch: async (items) => {
        batches.push(items.map((i) => i.value.n));
        return items.map(() => ({ kind: 'ack' as const }));
      },
    },
    word: okWords,
  };
}

t.test('lingering: a batch waits for more messages until it is full, an urgent message arrives, or the worker stops', async (t) => {
  const batches: number[][] = [];
  const { source, worker } = setup(
    recordingBatches(batches),
    // Far longer than the test: only a full batch, an urgent message or stop can end the wait.
    { batchSize: 4, lingerMs: 600_000, urgent: (v) => v.kind === 'num' && v.n < 0 },
  );
  await worker.start();
  const turns = () => new Promise((r) => setTimeout(r, 5));
  const first = [new FakeMsg('s', '1', 1), new FakeMsg('s', '2', 2)];
  for (const m of first) {
    source.deliver(m);
    await turns();
  }
  t.same(batches, [], 'nothing handled while the window is open');
  const urgent = new FakeMsg('s', '-3', 3);
  source.deliver(urgent);
  await until(() => urgent.answers.length > 0);
  t.same(batches, [[1, 2, -3]], 'an urgent message takes what waited with it, in one batch');
  const full = Array.from({ length: 4 }, (_, i) => new FakeMsg('s', String(10 + i), 10 + i));
  for (const m of full) {
    source.deliver(m);
    await turns();
  }
  await until(() => full.every((m) => m.answers.length > 0));
  t.same(batches[1], [10, 11, 12, 13], 'a full batch does not wait');
  const backlog = [new FakeMsg('s', '20', 20)];
  source.deliver(...backlog);
  await until(() => backlog.every((m) => m.answers.length > 0));
  t.same(batches[2], [20], 'nor does the batch after a full one (a backlog)');
  const left = [new FakeMsg('s', '30', 30), new FakeMsg('s', '31', 31)];
  source.deliver(...left);
  await turns();
  await worker.stop();
  t.equal(batches.length, 3);
  t.ok(
    left.every((m) => m.answers.length === 1 && 'nak' in (m.answers[0] as Answer)),
    'stopping hands back what lingered, unhandled and unacknowledged',
  );
  t.ok(
    [...first, urgent, ...full, ...backlog].every((m) => m.answers.length === 1 && 'ack' in (m.answers[0] as Answer)),
    'each handled message acked once',
  );
});

t.test('lingering: an urgent message left behind by a full batch still starts the next one at once', async (t) => {
  const batches: number[][] = [];
  const { source, worker } = setup(recordingBatches(batches), {
    batchSize: 2,
    lingerMs: 600_000,
    urgent: (v) => v.kind === 'num' && v.n < 0,
  });
  await worker.start();
  const msgs = [new FakeMsg('s', '1', 1), new FakeMsg('s', '2', 2), new FakeMsg('s', '-3', 3)];
  source.deliver(...msgs);
  await until(() => msgs.every((m) => m.answers.length > 0));
  await worker.stop();
  t.same(batches, [[1, 2], [-3]]);
});
