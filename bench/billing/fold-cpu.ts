// The CPU of billing's fold without its database (git log -p docs/benchmarks.md, "2026-11-27"): 200,000 checkpoints of
// 10,000 live attachments (part c's traffic) decoded as the consumer decodes them (decodeMessage), folded
// in batches of 50,000 (foldCheckpoints) and turned into the upsert's parameters; process.cpuUsage per
// checkpoint, versions 3 and 4 interleaved in one process. BENCH_BASE_DIR=<a checkout before version 4>
// adds its decodeMessage and fold on the version 3 payloads (its parameter: JSON.stringify of the batch).
//   node --conditions=@s2s/source --import tsx bench/billing/fold-cpu.ts [rounds=6]
import { pathToFileURL } from 'node:url';
import { decodeMessage } from '@s2s/bus';
import { compactRoutes, type UsageCheckpoint } from '@s2s/contract';
import { usageOf } from '@s2s/core';
import { foldCheckpoints, upsertParameters } from '@s2s/billing/bench';

const ROUNDS = Number(process.argv[2] ?? 6);
const ATTACHMENTS = 10_000;
const PER_ATTACHMENT = 20;
const BATCH = 50_000;
const encoder = new TextEncoder();

/** Part (c)'s checkpoints, seq-major, as the relays put them on the wire. */
function payloads(version: 3 | 4): Uint8Array[] {
  const out: Uint8Array[] = [];
  for (let seq = 1; seq <= PER_ATTACHMENT; seq++) {
    for (let a = 0; a < ATTACHMENTS; a++) {
      const usage = usageOf({
        audio_in_ms: 1000 * seq,
        audio_out_ms: 800 * seq,
        input_audio_tokens: 10 * seq,
        output_audio_tokens: 16 * seq,
      });
      const route = { provider: 'local', provider_model: 'bench', ...usage };
      const id = `${a.toString(36).padStart(4, '0')}${'x'.repeat(20)}`;
      out.push(
        encoder.encode(
          JSON.stringify({
            type: 'usage.checkpoint',
            version,
            session_id: `vs_${id}`,
            attachment_id: `att_${id}`,
            relay_id: 'bench-relay',
            seq,
            ...usage,
            routes: version === 3 ? [route] : compactRoutes([route]),
            final: false,
            emitted_at: 1_764_000_000_000 + seq * 250,
          }),
        ),
      );
    }
  }
  return out;
}

type Decode = (data: Uint8Array) => { ok: boolean; message?: unknown };
type Fold = (cs: Iterable<UsageCheckpoint>) => Map<string, UsageCheckpoint>;
interface Variant {
  label: string;
  data: Uint8Array[];
  decode: Decode;
  fold: Fold;
  parameter: (live: UsageCheckpoint[]) => { length: number };
}

const variants: Variant[] = [
  { label: 'this build, checkpoints v3', data: payloads(3), decode: decodeMessage, fold: foldCheckpoints, parameter: upsertParameters },
  { label: 'this build, checkpoints v4', data: payloads(4), decode: decodeMessage, fold: foldCheckpoints, parameter: upsertParameters },
];
const baseDir = process.env.BENCH_BASE_DIR;
if (baseDir) {
  const bus = (await import(pathToFileURL(`${baseDir}/packages/bus/src/index.ts`).href)) as { decodeMessage: Decode };
  const fold = (await import(pathToFileURL(`${baseDir}/services/billing/src/fold.ts`).href)) as { foldCheckpoints: Fold };
  variants.unshift({
    label: 'baseline, checkpoints v3',
    data: variants[0]!.data,
    decode: bus.decodeMessage,
    fold: fold.foldCheckpoints,
    parameter: (live) => JSON.stringify(live),
  });
}

/** CPU µs per checkpoint of one pass over every payload; checks the fold's result. */
function pass(v: Variant): number {
  const cpu0 = process.cpuUsage();
  let bytes = 0;
  for (let i = 0; i < v.data.length; i += BATCH) {
    const batch: UsageCheckpoint[] = [];
    for (const data of v.data.slice(i, i + BATCH)) {
      const decoded = v.decode(data);
      if (!decoded.ok) throw new Error('not decoded');
      batch.push(decoded.message as UsageCheckpoint);
    }
    const newest = v.fold(batch);
    if (newest.size !== ATTACHMENTS) throw new Error(`folded into ${newest.size}`);
    bytes += v.parameter([...newest.values()]).length;
  }
  const cpu = process.cpuUsage(cpu0);
  if (bytes === 0) throw new Error('no parameter');
  return (cpu.user + cpu.system) / v.data.length;
}

const fmt = (n: number, d = 2) => n.toLocaleString('en-US', { maximumFractionDigits: d, minimumFractionDigits: d });
const bytesOf = (v: Variant) => v.data.reduce((n, d) => n + d.length, 0) / v.data.length;
for (const v of variants) console.log(`${v.label}: ${fmt(bytesOf(v), 0)} bytes a checkpoint`);
for (const v of variants) pass(v); // warm-up
const results = new Map<string, number[]>(variants.map((v) => [v.label, []]));
for (let r = 1; r <= ROUNDS; r++) {
  for (const v of r % 2 === 1 ? variants : [...variants].reverse()) results.get(v.label)!.push(pass(v));
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;
for (const [label, xs] of results)
  console.log(`${label}: median ${fmt(median(xs))} µs CPU per checkpoint (${xs.map((x) => fmt(x)).join(', ')})`);
const first = median(results.get(variants[0]!.label)!);
for (const [label, xs] of results)
  if (label !== variants[0]!.label) console.log(`${label} / ${variants[0]!.label}: ${fmt(median(xs) / first)}`);
