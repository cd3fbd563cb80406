// Issue 28, item 1: BUS_STREAM_REPLICAS on a real three-node NATS cluster. The stream is created with the
// configured replicas, a service never lowers what an operator set, and the durable consumer follows.
import t, { type Test } from 'tap';
import { connectBus, ensureDurableConsumer, AckPolicy, type Bus } from '@s2s/bus';
import { NatsCluster, TempDir } from '@s2s/chaos';

t.setTimeout(120_000);

const dir = new TempDir('replicas');
let cluster: NatsCluster;
t.before(async () => {
  cluster = await NatsCluster.create(dir, 3);
});
t.teardown(async () => {
  await cluster?.stop();
  dir.remove();
});

async function bus(t: Test, prefix: string, streamReplicas?: number): Promise<Bus> {
  const b = await connectBus({ url: cluster.url, prefix, ...(streamReplicas === undefined ? {} : { streamReplicas }) });
  t.teardown(() => b.close());
  return b;
}

/** Replicas of a stream or consumer as the cluster placed them (the leader and its followers). */
function placed(info: { cluster?: { leader?: string; replicas?: unknown[] } }): number {
  return (info.cluster?.leader ? 1 : 0) + (info.cluster?.replicas?.length ?? 0);
}

t.test('a new stream gets BUS_STREAM_REPLICAS, the durable consumer follows it', async (t) => {
  const b = await bus(t, 'rep3', 3);
  const info = await b.jsm.streams.info(b.subjects.stream);
  t.equal(info.config.num_replicas, 3, 'num_replicas 3');
  t.equal(placed(info), 3, 'placed on three nodes');
  const consumer = await ensureDurableConsumer(b.jsm, b.subjects.stream, { durable_name: 'follower', ack_policy: AckPolicy.Explicit });
  t.equal(placed(consumer), 3, 'the durable consumer is replicated like its stream');
  const ack = await b.js.publish(b.subjects.endRequested('vs_x'), '{}', { msgID: 'one' });
  t.equal(ack.duplicate, false, 'a publish is acknowledged by the replicated stream');
});

t.test('default: one replica', async (t) => {
  const b = await bus(t, 'rep1');
  t.equal((await b.jsm.streams.info(b.subjects.stream)).config.num_replicas, 1);
});

t.test('a service started with fewer replicas never lowers what an operator set', async (t) => {
  const operator = await bus(t, 'repop', 3);
  t.equal((await operator.jsm.streams.info(operator.subjects.stream)).config.num_replicas, 3);
  const service = await bus(t, 'repop', 1);
  t.equal((await service.jsm.streams.info(service.subjects.stream)).config.num_replicas, 3, 'still 3 after a service with 1 started');
});

t.test('a one-replica stream is raised to BUS_STREAM_REPLICAS, and its durable consumer with it', async (t) => {
  const before = await bus(t, 'repup', 1);
  await ensureDurableConsumer(before.jsm, before.subjects.stream, { durable_name: 'billing', ack_policy: AckPolicy.Explicit });
  t.equal(placed(await before.jsm.consumers.info(before.subjects.stream, 'billing')), 1, 'consumer on one node');
  const after = await bus(t, 'repup', 3);
  const info = await after.jsm.streams.info(after.subjects.stream);
  t.equal(info.config.num_replicas, 3, 'raised to 3');
  // While the consumer moves to three nodes its API requests may time out: asked again for up to 20 s.
  let consumer: Awaited<ReturnType<typeof ensureDurableConsumer>> | undefined;
  for (const until = Date.now() + 20_000; Date.now() < until && (consumer === undefined || placed(consumer) < 3);) {
    consumer = await ensureDurableConsumer(after.jsm, after.subjects.stream, {
      durable_name: 'billing',
      ack_policy: AckPolicy.Explicit,
    }).catch((err: Error) => (err.name === 'TimeoutError' ? undefined : Promise.reject(err)));
    if (consumer === undefined || placed(consumer) < 3) await new Promise((resolve) => setTimeout(resolve, 250));
  }
  t.equal(consumer && placed(consumer), 3, 'the existing durable consumer follows the stream to three nodes');
});
