// AckedPublisher against the shared NATS server (a stream of its own per test).
import { randomBytes } from 'node:crypto';
import fc from 'fast-check';
import t, { type Test } from 'tap';
import { AckedPublisher, connectBus, createHeaders, type Bus } from '../src/index.js';

const NATS_URL = process.env.NATS_URL ?? 'nats://127.0.0.1:4222';

async function bus(t: Test): Promise<Bus> {
  const b = await connectBus({ url: NATS_URL, prefix: `t_${randomBytes(4).toString('hex')}`, name: 'acked-publish-test' });
  t.teardown(async () => {
    await b.jsm.streams.delete(b.subjects.stream).catch(() => undefined);
    await b.close();
  });
  return b;
}

/** The stored message of stream sequence `seq`. */
async function stored(b: Bus, seq: number) {
  return b.jsm.streams.getMessage(b.subjects.stream, { seq });
}

t.test('acknowledged by the stream: the PubAck, the payload and headers stored, the Msg-Id deduplicated', async (t) => {
  const b = await bus(t);
  const trace = createHeaders();
  trace.set('traceparent', '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01');
  const subject = b.subjects.usageCheckpoint('vs_1');
  const first = await b.publishAcked(subject, '{"n":1}', 'att_1:1', trace);
  t.match(first, { stream: b.subjects.stream, seq: 1, duplicate: false });
  const second = await b.publishAcked(subject, new TextEncoder().encode('{"n":2}'), 'att_1:2', trace);
  t.equal(second.seq, 2);
  const again = await b.publishAcked(subject, '{"n":1}', 'att_1:1', trace);
  t.match(again, { seq: 1, duplicate: true }, 'a retry inside the duplicate window is the same message');
  const m = await stored(b, 2);
  t.equal(new TextDecoder().decode(m!.data), '{"n":2}');
  t.equal(m!.header.get('Nats-Msg-Id'), 'att_1:2');
  t.equal(m!.header.get('traceparent'), trace.get('traceparent'), 'the headers given are carried');
  t.notOk(trace.has('Nats-Msg-Id'), 'the headers given are not changed');
  t.equal((await b.jsm.streams.info(b.subjects.stream)).state.messages, 2);
});

t.test('many at once: each answer reaches its own publish', async (t) => {
  const b = await bus(t);
  const acks = await Promise.all(
    Array.from({ length: 500 }, (_, i) => b.publishAcked(b.subjects.usageCheckpoint(`vs_${i % 7}`), `{"i":${i}}`, `m_${i}`)),
  );
  t.same(
    acks.map((a) => a.seq).sort((x, y) => x - y),
    Array.from({ length: 500 }, (_, i) => i + 1),
    'every publish its own sequence',
  );
  for (const i of [0, 123, 499]) t.equal(new TextDecoder().decode((await stored(b, acks[i]!.seq))!.data), `{"i":${i}}`);
});

t.test('no stream on the subject: rejected (no responders), not left waiting', async (t) => {
  const b = await bus(t);
  await t.rejects(b.publishAcked(`nostream_${randomBytes(4).toString('hex')}.x`, '{}', 'x'), { name: 'NoResponders' });
});

t.test('an answer that is not a PubAck, or none at all: rejected', async (t) => {
  const b = await bus(t);
  const publisher = new AckedPublisher(b.nc, 300);
  t.teardown(() => publisher.close());
  // A core subscriber that answers with an API error, one that answers garbage, one that never answers.
  const base = `noack_${randomBytes(4).toString('hex')}`;
  const errorSub = b.nc.subscribe(`${base}.error`, {
    callback: (_e, m) => {
      m.respond(
        JSON.stringify({
          type: 'io.nats.jetstream.api.v1.pub_ack_response',
          error: { code: 503, err_code: 10077, description: 'maximum messages exceeded' },
        }),
      );
    },
  });
  const garbageSub = b.nc.subscribe(`${base}.garbage`, { callback: (_e, m) => void m.respond('not json') });
  const silentSub = b.nc.subscribe(`${base}.silent`, { callback: () => undefined });
  t.teardown(() => [errorSub, garbageSub, silentSub].forEach((s) => s.unsubscribe()));
  await b.nc.flush();
  await t.rejects(publisher.publish(`${base}.error`, '{}', 'e'), { name: 'JetStreamApiError', message: /maximum messages exceeded/ });
  await t.rejects(publisher.publish(`${base}.garbage`, '{}', 'g'), { message: 'invalid ack response' });
  await t.rejects(publisher.publish(`${base}.silent`, '{}', 's'), { name: 'TimeoutError' });
  t.equal(publisher.inFlight, 0, 'nothing left pending');
  const left = publisher.publish(`${base}.silent`, '{}', 's2');
  publisher.close();
  await t.rejects(left, { message: 'acknowledged publisher closed' }, 'closing rejects what is in flight');
});

t.test('AckedPublisher and js.publish agree: the same PubAcks and stored messages for the same publishes', async (t) => {
  const plain = await bus(t);
  const trick = await bus(t);
  const decode = (d: Uint8Array) => new TextDecoder().decode(d);
  let round = 0;
  await fc.assert(
    fc.asyncProperty(
      fc.array(
        fc.record({
          session: fc.integer({ min: 0, max: 3 }),
          payload: fc.oneof(fc.string({ maxLength: 300 }), fc.uint8Array({ maxLength: 300 })),
          // Few ids, so that some publishes repeat one (a duplicate inside the window).
          id: fc.integer({ min: 0, max: 8 }),
          traceparent: fc.option(fc.stringMatching(/^00-[0-9a-f]{32}-[0-9a-f]{16}-0[01]$/), { nil: undefined }),
        }),
        { minLength: 1, maxLength: 12 },
      ),
      async (publishes) => {
        round++;
        const acks: [unknown, unknown][] = [];
        for (const p of publishes) {
          const headers = createHeaders();
          if (p.traceparent !== undefined) headers.set('traceparent', p.traceparent);
          const msgId = `r${round}:${p.id}`;
          const a = await plain.js.publish(plain.subjects.usageCheckpoint(`vs_${p.session}`), p.payload, { msgID: msgId, headers });
          const b = await trick.publishAcked(trick.subjects.usageCheckpoint(`vs_${p.session}`), p.payload, msgId, headers);
          acks.push([
            { seq: a.seq, duplicate: a.duplicate },
            { seq: b.seq, duplicate: b.duplicate },
          ]);
          const [sa, sb] = [await stored(plain, a.seq), await stored(trick, b.seq)];
          if (decode(sa!.data) !== decode(sb!.data) || sa!.header.get('Nats-Msg-Id') !== sb!.header.get('Nats-Msg-Id')) return false;
          if (sa!.header.get('traceparent') !== sb!.header.get('traceparent')) return false;
          if (sa!.subject.slice(plain.subjects.stream.length) !== sb!.subject.slice(trick.subjects.stream.length)) return false;
        }
        return acks.every(([a, b]) => JSON.stringify(a) === JSON.stringify(b));
      },
    ),
    { numRuns: 25 },
  );
  t.equal(plain.subjects.stream !== trick.subjects.stream, true, 'two streams, one per path');
  // No stream on the subject: both reject at once. Their errors' names differ (nats.js: JetStreamNotEnabled; the trick:
  // NoResponders), which no caller reads: the relay's checkpointer retries on any rejection.
  const nowhere = `nostream_${randomBytes(4).toString('hex')}.x`;
  const [ea, eb] = await Promise.all([
    plain.js.publish(nowhere, '{}', { msgID: 'x' }).catch((e: Error) => e.name),
    trick.publishAcked(nowhere, '{}', 'x').catch((e: Error) => e.name),
  ]);
  t.same([ea, eb], ['JetStreamNotEnabled', 'NoResponders'], 'both reject');
});
