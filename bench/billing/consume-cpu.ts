// The CPU of billing's consumer path without NATS or the database (git log -p docs/benchmarks.md, "billing perf profile"):
// part (c)'s 200,000 checkpoints of 10,000 attachments arrive as fake JetStream messages, 1,000 per event-loop
// turn (as socket reads hand them over), into the generic worker (`createWorker`) with billing's decoder; the
// batch handler folds each batch, sorts it and builds the upsert's JSON parameter as the store does, then waits
// 20 ms (the transaction) while later messages keep arriving. CPU per checkpoint includes the garbage
// collector's (main thread and its helpers), so what the worker keeps per message until its batch is done shows.
// BENCH_WORKER_BEFORE=<a copy of packages/bus/src/worker.ts, its imports made absolute> runs that worker too,
// rounds alternated, with the ratio of each round.
//   node --conditions=@s2s/source --import tsx bench/billing/consume-cpu.ts [rounds=6]
import { loadavg } from 'node:os';
import { pathToFileURL } from 'node:url';
import { ACK, createWorker, type Item, type WorkerMsg, type WorkerOptions } from '@s2s/bus';
import { busSubjects, compactRoutes, type UsageCheckpoint } from '@s2s/contract';
import { usageOf } from '@s2s/core';
import { billingDecoder, foldCheckpoints, newCounters, sortedForStore, upsertParameters } from '@s2s/billing/bench';

const ROUNDS = Number(process.argv[2] ?? 6);
const ATTACHMENTS = 10_000;
const PER_ATTACHMENT = 20;
const BATCH = 50_000;
const ARRIVALS_PER_TURN = 1000;
const STORE_MS = 20;
const subjects = busSubjects('bench');
const encoder = new TextEncoder();

/** Part (c)'s checkpoints (version 4), seq-major, as the relays put them on the wire. */
function payloads(): { subject: string; data: Uint8Array }[] {
  const out: { subject: string; data: Uint8Array }[] = [];
  for (let seq = 1; seq <= PER_ATTACHMENT; seq++) {
    for (let a = 0; a < ATTACHMENTS; a++) {
      const usage = usageOf({
        audio_in_ms: 1000 * seq,
        audio_out_ms: 800 * seq,
        input_audio_tokens: 10 * seq,
        output_audio_tokens: 16 * seq,
      });
      const id = `${a.toString(36).padStart(4, '0')}${'x'.repeat(20)}`;
      const c = {
        type: 'usage.checkpoint',
        version: 4,
        session_id: `vs_${id}`,
        attachment_id: `att_${id}`,
        relay_id: 'bench-relay',
        seq,
        ...usage,
        routes: compactRoutes([{ provider: 'local', provider_model: 'bench', ...usage }]),
        final: false,
        emitted_at: 1_764_000_000_000 + seq * 250,
      };
      out.push({ subject: subjects.usageCheckpoint(c.session_id), data: encoder.encode(JSON.stringify(c)) });
    }
  }
  return out;
}

/** A JetStream message as the worker sees it; like nats.js's, it holds a copy of its subject and payload. */
class FakeMsg implements WorkerMsg {
  acked = false;
  readonly info = { deliveryCount: 1, timestampNanos: 0, stream: 'bench' };
  constructor(
    readonly subject: string,
    readonly data: Uint8Array,
    readonly seq: number,
  ) {}
  ack() {
    this.acked = true;
  }
  nak() {}
  term() {}
  working() {}
}

type Create = typeof createWorker;
const noLog = { warn() {}, error() {}, info() {}, debug() {} } as never;

/** CPU µs per checkpoint of one pass: every message arrived, folded and acknowledged. */
async function pass(create: Create, wire: { subject: string; data: Uint8Array }[]): Promise<number> {
  let acked = 0;
  let folded = 0;
  let onMessage: ((m: WorkerMsg) => void) | undefined;
  let all: () => void = () => {};
  const done = new Promise<void>((resolve) => (all = resolve));
  const decode = billingDecoder({ subjects } as never, newCounters(), noLog);
  const opts: WorkerOptions<{ kind: 'checkpoint'; checkpoint: UsageCheckpoint }> = {
    source: {
      start: async (fn) => {
        onMessage = fn;
      },
      stop: async () => {},
    },
    decode: decode as never,
    handlers: {
      checkpoint: {
        batch: async (items: Item<{ kind: 'checkpoint'; checkpoint: UsageCheckpoint }>[]) => {
          const newest = foldCheckpoints(items.map((i) => i.value.checkpoint));
          const parameter = upsertParameters(sortedForStore(newest.values()));
          if (parameter.length === 0) throw new Error('no parameter');
          folded += items.length;
          await new Promise((r) => setTimeout(r, STORE_MS));
          return items.map(() => ACK);
        },
      },
    },
    deadLetter: async () => {},
    batchSize: BATCH,
    ackWaitMs: 30_000,
    maxDeliver: 10,
    nakBaseMs: 500,
    nakMaxMs: 30_000,
    isOutage: () => false,
    log: noLog,
  };
  const worker = create(opts);
  await worker.start();
  const cpu0 = process.cpuUsage();
  const msgs: FakeMsg[] = [];
  for (let i = 0; i < wire.length; i += ARRIVALS_PER_TURN) {
    await new Promise((r) => setImmediate(r));
    for (let j = i; j < Math.min(wire.length, i + ARRIVALS_PER_TURN); j++) {
      const w = wire[j]!;
      // A fresh copy per delivery, as a socket read gives.
      const m = new FakeMsg(w.subject, w.data.slice(), j + 1);
      msgs.push(m);
      onMessage!(m);
    }
  }
  const check = setInterval(() => {
    if (folded >= wire.length) all();
  }, 5);
  await done;
  clearInterval(check);
  await worker.stop();
  const cpu = process.cpuUsage(cpu0);
  for (const m of msgs) if (m.acked) acked++;
  if (acked !== wire.length) throw new Error(`acknowledged ${acked} of ${wire.length}`);
  return (cpu.user + cpu.system) / wire.length;
}

const wire = payloads();
const builds: [string, Create][] = [['this build', createWorker]];
const before = process.env.BENCH_WORKER_BEFORE;
if (before) builds.unshift(['before', ((await import(pathToFileURL(before).href)) as { createWorker: Create }).createWorker]);
for (const [, create] of builds) await pass(create, wire); // warm-up
const results = new Map<string, number[]>(builds.map(([label]) => [label, []]));
for (let r = 1; r <= ROUNDS; r++) {
  for (const [label, create] of r % 2 === 1 ? builds : [...builds].reverse()) results.get(label)!.push(await pass(create, wire));
}
const fmt = (n: number) => n.toLocaleString('en-US', { maximumFractionDigits: 2, minimumFractionDigits: 2 });
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;
for (const [label, xs] of results)
  console.log(`${label}: median ${fmt(median(xs))} µs CPU per checkpoint (${xs.map(fmt).join(', ')}), load ${loadavg()[0]!.toFixed(1)}`);
if (before) {
  const b = results.get('before')!;
  const ratios = results.get('this build')!.map((x, i) => x / b[i]!);
  console.log(`this build / before, per round: ${ratios.map(fmt).join(', ')}; median ${fmt(median(ratios))}`);
}
