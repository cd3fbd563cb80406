// Where a consumer's CPU goes, from a perf profile with native frames and every thread (git log -p docs/benchmarks.md,
// "billing under perf"): each sample goes to the category of its innermost frame that has one, per thread
// (the main thread, or V8's helper threads: TurboFan jobs, parallel scavenges, concurrent marking), and is
// printed as µs per message. Record the process with node's --perf-basic-prof, e.g. for part (c) of bench.ts:
//   BENCH_NODE_ARGS=--perf-basic-prof ... npx tsx bench/billing/bench.ts & perf record -F 1999 -g -p <pid> -- sleep 40
//   perf script -F comm,tid,time,ip,sym > s.txt
//   node --import tsx bench/billing/perf-shares.ts s.txt <from s> <to s> <messages>   (times as perf script prints them)
import { readFileSync } from 'node:fs';

const [file, from, to, messages] = process.argv.slice(2);
if (!file) throw new Error('usage: perf-shares.ts <perf script output> [from] [to] [messages=200000]');
const HZ = 1999;
const N = Number(messages ?? 200_000);

/** Innermost matching frame wins, so a category's figure is what its own frames (and what they call unnamed) cost. */
const CATEGORIES: [string, RegExp][] = [
  [
    'GC',
    /Heap::|Scavenger|ScavengeJob|MarkCompact|ConcurrentMarking|MarkingBarrier|IncrementalMarking|Sweeper|MemoryAllocator|GCTracer|RecordWrite/,
  ],
  [
    'JIT (compile, deopt)',
    /Compiler|compiler::|Turbofan|Maglev|OptimizingCompileDispatcher|CompileLazy|BytecodeGenerator|Parser::|interpreter::|Deoptimiz/,
  ],
  ['module loading', /Module\._compile|wrapSafe|compileForInternalLoader|esm\/translators|ModuleWrap/],
  ['JSON.parse', /JsonParser|Builtins_JsonParse/],
  ['JSON.stringify', /JsonStringifier|Builtins_JsonStringify/],
  ['UTF-8 decode/encode', /TextDecoder|DecodeUTF8|Utf8Decoder|encoding_binding|StringBytes|NewFromUtf8|Utf8/],
  ['checkpoint validation', /fastUsageCheckpoint|isCompactRoute|compactRoutesSumToTotals/],
  ['billing fold and store (JS)', /billing\/src\/(fold|usage-store|handlers|consumer)/],
  ['pg driver', /\/pg@|pg-protocol|pg-pool|pg-types/],
  ['bus worker', /bus\/src\/worker/],
  [
    'nats acks (respond, publish)',
    /jsmsg\.js|msg\.js:\d+:\d+$|[*^]respond |protocol\.js.*publish|denobuffer|databuffer|encoders\.js|sendCommand/,
  ],
  ['nats socket writes', /flushPending|node_transport\.js/],
  ['nats receive (parser, consumer; JS inlined into it)', /@nats-io/],
  ['kernel (syscalls, page faults)', /entry_SYSCALL|do_syscall_64|asm_exc_page_fault|asm_sysvec|asm_common_interrupt/],
  ['event loop, microtasks', /processImmediate|RunMicrotasks|processTicksAndRejections|uv_run/],
];

interface Sample {
  tid: number;
  time: number;
  frames: string[];
}

function samples(text: string): Sample[] {
  const out: Sample[] = [];
  let cur: Sample | undefined;
  for (const line of text.split('\n')) {
    if (line.trim() === '') continue;
    if (!/^\s/.test(line)) {
      const m = /^\S+\s+(\d+)\s+([\d.]+):/.exec(line);
      if (!m) continue;
      cur = { tid: Number(m[1]), time: Number(m[2]), frames: [] };
      out.push(cur);
    } else if (cur) {
      const t = line.trim();
      const space = t.indexOf(' ');
      cur.frames.push(space < 0 ? t : t.slice(space + 1));
    }
  }
  return out;
}

const all = samples(readFileSync(file, 'utf8')).filter((s) => s.time >= Number(from ?? -Infinity) && s.time <= Number(to ?? Infinity));
const perTid = new Map<number, number>();
for (const s of all) perTid.set(s.tid, (perTid.get(s.tid) ?? 0) + 1);
const main = [...perTid].sort((a, b) => b[1] - a[1])[0]?.[0];
const byThread = { main: new Map<string, number>(), helpers: new Map<string, number>() };
for (const s of all) {
  const cat = s.frames.map((f) => CATEGORIES.find(([, re]) => re.test(f))?.[0]).find((c) => c !== undefined) ?? 'other';
  const m = s.tid === main ? byThread.main : byThread.helpers;
  m.set(cat, (m.get(cat) ?? 0) + 1);
}
const us = (n: number) => ((n / HZ / N) * 1e6).toFixed(2);
console.log(`${all.length} samples = ${(all.length / HZ).toFixed(2)} s of CPU = ${us(all.length)} µs per message (${N} messages)`);
for (const [name, m] of Object.entries(byThread)) {
  const total = [...m.values()].reduce((a, b) => a + b, 0);
  console.log(`${name} thread${name === 'helpers' ? 's' : ''}: ${us(total)} µs per message`);
  for (const [cat, n] of [...m].sort((a, b) => b[1] - a[1]))
    console.log(`  ${cat.padEnd(52)} ${us(n).padStart(6)} µs  ${((100 * n) / total).toFixed(1).padStart(5)} %`);
}
