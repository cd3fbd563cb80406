// Paired, in-process: CPU per acknowledged JetStream publish through `js.publish` (nats.js's request per
// publish) against AckedPublisher (one wildcard reply subscription; packages/bus/src/hot/acked-publish.ts), the
// two alternated A B B A in the same process against the same stream, so load on the machine falls on both.
// A publish is what the relay's usage checkpoints send: a ~300-byte JSON payload, a Msg-Id, a traceparent.
// Prints the CPU per publish of each arm and the ratio trick ÷ plain with a bootstrap 95 % interval.
//   NODE_OPTIONS=--conditions=@s2s/source npx tsx bench/bus/acked-publish.ts [--rounds 12] [--block 4000]
//     [--inflight 100] [--nats nats://127.0.0.1:4222]
import { randomBytes } from 'node:crypto';
import { parseArgs } from 'node:util';
import { connectBus, createHeaders, type Bus } from '@s2s/bus';

const { values } = parseArgs({
  options: {
    rounds: { type: 'string', default: '12' },
    block: { type: 'string', default: '4000' },
    inflight: { type: 'string', default: '100' },
    nats: { type: 'string', default: process.env.NATS_URL ?? 'nats://127.0.0.1:4222' },
  },
});
const rounds = Number(values.rounds);
const block = Number(values.block);
const inflight = Number(values.inflight);

type Arm = 'plain' | 'trick';
type Publish = (subject: string, payload: Uint8Array, msgId: string) => Promise<unknown>;

const payload = new TextEncoder().encode(
  JSON.stringify({
    type: 'usage.checkpoint',
    version: 1,
    session_id: 'vs_0123456789abcdef0123456789abcdef',
    attachment_id: 'att_0123456789abcdef0123456789abcdef',
    seq: 1,
    usage: { audio_in_ms: 123456, audio_out_ms: 65432, text_in_tokens: 1234, text_out_tokens: 4321 },
    route: 'local',
    at: new Date().toISOString(),
  }),
);
const trace = createHeaders();
trace.set('traceparent', '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01');

function publishers(bus: Bus): Record<Arm, Publish> {
  return {
    plain: (subject, data, msgId) => bus.js.publish(subject, data, { msgID: msgId, headers: trace }),
    trick: (subject, data, msgId) => bus.publishAcked(subject, data, msgId, trace),
  };
}

/** `block` publishes with `inflight` outstanding; the CPU microseconds this process spent per publish. */
async function runBlock(publish: Publish, bus: Bus, tag: string): Promise<number> {
  let next = 0;
  const cpu = process.cpuUsage();
  const worker = async () => {
    while (next < block) {
      const i = next++;
      await publish(bus.subjects.usageCheckpoint(`vs_${i % 500}`), payload, `${tag}:${i}`);
    }
  };
  await Promise.all(Array.from({ length: inflight }, worker));
  const used = process.cpuUsage(cpu);
  return (used.user + used.system) / block;
}

function bootstrap(ratios: number[], draws = 10_000): [number, number] {
  const means: number[] = [];
  for (let d = 0; d < draws; d++) {
    let sum = 0;
    for (let i = 0; i < ratios.length; i++) sum += ratios[Math.floor(Math.random() * ratios.length)]!;
    means.push(sum / ratios.length);
  }
  means.sort((a, b) => a - b);
  return [means[Math.floor(draws * 0.025)]!, means[Math.floor(draws * 0.975)]!];
}

const bus = await connectBus({
  url: values.nats,
  prefix: `bench_${randomBytes(4).toString('hex')}`,
  name: 'bench-acked',
  noAsyncTraces: true,
});
try {
  const arms = publishers(bus);
  let tag = 0;
  for (const arm of ['plain', 'trick'] as const) await runBlock(arms[arm], bus, `warm${tag++}`); // JIT, connections
  const ratios: number[] = [];
  const per: Record<Arm, number[]> = { plain: [], trick: [] };
  for (let r = 0; r < rounds; r++) {
    const order: Arm[] = r % 2 === 0 ? ['plain', 'trick', 'trick', 'plain'] : ['trick', 'plain', 'plain', 'trick'];
    const got: Record<Arm, number[]> = { plain: [], trick: [] };
    for (const arm of order) got[arm].push(await runBlock(arms[arm], bus, `r${r}-${tag++}`));
    const mean = (a: number[]) => a.reduce((s, x) => s + x, 0) / a.length;
    per.plain.push(mean(got.plain));
    per.trick.push(mean(got.trick));
    ratios.push(mean(got.trick) / mean(got.plain));
    console.log(
      `round ${r + 1}: plain ${mean(got.plain).toFixed(2)} µs, trick ${mean(got.trick).toFixed(2)} µs, ratio ${ratios.at(-1)!.toFixed(3)}`,
    );
  }
  const mean = (a: number[]) => a.reduce((s, x) => s + x, 0) / a.length;
  const [lo, hi] = bootstrap(ratios);
  console.log(
    `CPU per publish (this process): plain ${mean(per.plain).toFixed(2)} µs, trick ${mean(per.trick).toFixed(2)} µs; ` +
      `trick ÷ plain ${mean(ratios).toFixed(3)} (95 % bootstrap ${lo.toFixed(3)}–${hi.toFixed(3)}), ${rounds} rounds of ${block} × 4, ${inflight} in flight`,
  );
} finally {
  await bus.jsm.streams.delete(bus.subjects.stream).catch(() => undefined);
  await bus.close();
}
