// The checkpointer in isolation against the real NATS (git log -p docs/benchmarks.md, "2026-11-27: the per-second
// checkpoint work"): N attachments streaming 20 ms frames each way, metered by the relay's UsageMeter, their
// checkpoints published by a real Checkpointer (250 ms, early checkpoints, acknowledged once a second) on a
// real bus connection; prints the process CPU per checkpoint published, less a control round that runs the
// same frames with no checkpointer. To compare two builds of checkpoints.ts in one process, rounds interleaved:
//   BENCH_CHECKPOINTS_BEFORE=<path to the other checkpoints.ts> node --conditions=@s2s/source --import tsx \
//     bench/relay/checkpoints.ts [N=200] [seconds per round=4] [rounds=4]
// (the other file is imported as it is: put it beside the relay's checkpoints.ts so its relative imports resolve,
// e.g. `git show <rev>:services/relay/src/metering/checkpoints.ts > services/relay/src/metering/before-checkpoints.tmp.ts`).
import { randomBytes } from 'node:crypto';
import { pathToFileURL } from 'node:url';
import { connectBus, traceHeaders } from '@s2s/bus';
import { context, createLogger, disabledMetrics, trace } from '@s2s/telemetry';
import { Checkpointer, RelayTelemetry, UsageMeter, type CheckpointTicket, type MeteredSource } from '@s2s/relay/bench';

const N = Number(process.argv[2] ?? 200);
const SECONDS = Number(process.argv[3] ?? 4);
const ROUNDS = Number(process.argv[4] ?? 4);
const FRAME_MS = 20;
const FRAME_BYTES = 48 * FRAME_MS;

type CheckpointerClass = typeof Checkpointer;
const variants: [string, CheckpointerClass | null][] = [
  ['control (frames, no checkpointer)', null],
  ['this build', Checkpointer],
];
const beforePath = process.env.BENCH_CHECKPOINTS_BEFORE;
if (beforePath) {
  const mod = (await import(pathToFileURL(beforePath).href)) as { Checkpointer: CheckpointerClass };
  variants.splice(1, 0, ['before', mod.Checkpointer]);
}

const bus = await connectBus({
  url: process.env.NATS_URL ?? 'nats://127.0.0.1:4222',
  prefix: `bench_${randomBytes(4).toString('hex')}`,
  name: 'checkpoint-bench',
  noAsyncTraces: true,
});
const logger = createLogger({ service: 'checkpoint-bench', level: 'warn' });
const telemetry = new RelayTelemetry(disabledMetrics().meter, 'bench-relay');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** One round: N attachments for SECONDS; CPU µs of the process and checkpoints published. */
async function round(Impl: CheckpointerClass | null): Promise<{ cpuUs: number; checkpoints: number; wallMs: number }> {
  const checkpointer = Impl ? new Impl({ bus, relayId: 'bench-relay', logger, intervalMs: 250, telemetry }) : null;
  const attachments = Array.from({ length: N }, (_, i) => {
    const meter = new UsageMeter({ inputMsPerToken: 100, outputMsPerToken: 50 }, { provider: 'local', provider_model: 'echo-1' });
    // The attachment's span as the relay has it with no exporter: a sampled context nothing records.
    const ctx = trace.setSpan(
      context.active(),
      trace.wrapSpanContext({ traceId: randomBytes(16).toString('hex'), spanId: randomBytes(8).toString('hex'), traceFlags: 1 }),
    );
    const source: MeteredSource = {
      sessionId: `vs_bench_${i}`,
      attachmentId: `att_bench_${i}_${randomBytes(6).toString('hex')}`,
      usage: () => meter.usage(),
      routes: () => meter.routes(),
      trace: { context: ctx, headers: traceHeaders(ctx) },
    };
    return { meter, ticket: checkpointer?.track(source) as CheckpointTicket | undefined };
  });
  checkpointer?.start();
  await sleep(300);
  const started = performance.now();
  const cpu0 = process.cpuUsage();
  const seq0 = attachments.reduce((n, a) => n + (a.ticket?.seq ?? 0), 0);
  // Every attachment gets a 20 ms frame each way per 20 ms, as a streaming turn does.
  const frames = setInterval(() => {
    for (const a of attachments) {
      a.meter.addInput(FRAME_BYTES);
      a.meter.addOutput(FRAME_BYTES);
      if (a.ticket) checkpointer?.markDirty(a.ticket, a.meter.usage());
      else a.meter.usage();
    }
  }, FRAME_MS);
  await sleep(SECONDS * 1000);
  clearInterval(frames);
  const cpu = process.cpuUsage(cpu0);
  const wallMs = performance.now() - started;
  const checkpoints = attachments.reduce((n, a) => n + (a.ticket?.seq ?? 0), 0) - seq0;
  checkpointer?.stop();
  await sleep(500); // the acknowledgements in flight come back
  return { cpuUs: cpu.user + cpu.system, checkpoints, wallMs };
}

const fmt = (n: number, d = 1) => n.toLocaleString('en-US', { maximumFractionDigits: d, minimumFractionDigits: d });
const perCheckpoint = new Map<string, number[]>();
for (let r = 1; r <= ROUNDS; r++) {
  const results = new Map<string, { cpuUs: number; checkpoints: number; wallMs: number }>();
  for (const [label, Impl] of r % 2 === 1 ? variants : [...variants].reverse()) results.set(label, await round(Impl));
  const control = results.get(variants[0]![0])!;
  const controlPerMs = control.cpuUs / control.wallMs;
  for (const [label, res] of results) {
    if (label === variants[0]![0]) {
      console.log(`round ${r}, ${label}: ${fmt(res.cpuUs / res.wallMs / 10, 1)} % of a core`);
      continue;
    }
    const us = (res.cpuUs - controlPerMs * res.wallMs) / res.checkpoints;
    perCheckpoint.set(label, [...(perCheckpoint.get(label) ?? []), us]);
    console.log(
      `round ${r}, ${label}: ${res.checkpoints} checkpoints (${fmt(res.checkpoints / (res.wallMs / 1000) / N, 2)}/s per attachment), ` +
        `${fmt(res.cpuUs / res.wallMs / 10, 1)} % of a core, ${fmt(us, 2)} µs CPU per checkpoint over the control`,
    );
  }
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;
for (const [label, xs] of perCheckpoint)
  console.log(`${label}: median ${fmt(median(xs), 2)} µs CPU per checkpoint (${xs.map((x) => fmt(x, 2)).join(', ')})`);
const before = perCheckpoint.get('before');
const after = perCheckpoint.get('this build');
if (before && after) console.log(`this build / before, medians: ${fmt(median(after) / median(before), 2)}`);
await bus.jsm.streams.delete(bus.subjects.stream).catch(() => undefined);
await bus.close();
