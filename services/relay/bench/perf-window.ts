// CPU per relayed frame of one measured run of bench.ts, by category, from a perf profile (docs/benchmarks.md,
// 2026-11-27, the unprimed N = 50). Record the relay and the pass-through of a run with BENCH_DEBUG=1 (bench.ts
// prints each measured window and its pid), BENCH_RELAY_NODE_ARGS=--perf-basic-prof and the same for the proxy:
//   perf record -k CLOCK_MONOTONIC -e cpu-clock -c 500000 -e syscalls:sys_enter_epoll_pwait \
//     -e syscalls:sys_enter_write -e syscalls:sys_enter_writev -e syscalls:sys_enter_read -g -p <relay>,<proxy>
//   perf script --time <from>,<to> -F comm,pid,tid,time,event,ip,sym > w.txt
//   node --import tsx services/relay/bench/perf-window.ts w.txt <pid> <frames in the window>
// Each cpu-clock sample (500 µs) goes to the category of its innermost frame that has one, on the main thread
// or on V8's helper threads (TurboFan jobs, concurrent marking); syscall samples are counted per frame.
import { readFileSync } from 'node:fs';

const [file, pidArg, framesArg] = process.argv.slice(2);
if (!file || !pidArg || !framesArg) throw new Error('usage: perf-window.ts <perf script output> <pid> <frames>');
const PID = Number(pidArg);
const FRAMES = Number(framesArg);
const SAMPLE_US = 500;

const CATEGORIES: [string, RegExp][] = [
  ['GC', /Heap::|Scavenger|MarkCompact|ConcurrentMarking|MarkingBarrier|IncrementalMarking|Sweeper|MemoryAllocator|RecordWrite|heap::/],
  [
    'JIT (compile, deopt)',
    /Compiler|compiler::|Turbofan|Maglev|OptimizingCompileDispatcher|CompileLazy|BytecodeGenerator|Parser::|Deoptimiz/,
  ],
  ['kernel', /entry_SYSCALL|do_syscall_64|asm_exc_page_fault|asm_sysvec|asm_common_interrupt|__x64_sys|tcp_/],
  ['V8 runtime (Runtime_*)', /Runtime_/],
  ['V8 builtins (ICs, JSON, typed arrays)', /Builtins_|Builtin:/],
  ['JS: relay', /services\/relay\/src\//],
  ['JS: workspace packages', /packages\/[a-z-]+\/(src|dist)\//],
  ['JS: ws', /\/ws\/lib\//],
  ['JS: nats', /@nats-io/],
  ['JS: node internals', /node:|internal\//],
  ['JS: other', /^(JS|LazyCompile|Function|Script):/],
];

interface Sample {
  tid: number;
  event: string;
  frames: string[];
}

/** perf script prints one block per sample, a header line and then its frames, innermost first. */
function parse(text: string): Sample[] {
  return text.split(/\n\s*\n/).flatMap((block) => {
    const [header = '', ...stack] = block.split('\n');
    const m = /^.+?\s+(\d+)\/(\d+)\s+[\d.]+:\s+(?:\d+\s+)?(\S+):/.exec(header.trimStart());
    if (!m || Number(m[1]) !== PID) return [];
    const frames = stack.map((l) => l.trim()).map((t) => t.slice(t.indexOf(' ') + 1));
    return [{ tid: Number(m[2]), event: m[3] as string, frames }];
  });
}

const samples = parse(readFileSync(file, 'utf8'));
const perFrame = (n: number) => ((n * SAMPLE_US) / FRAMES).toFixed(2);
const cpu = samples.filter((s) => s.event.startsWith('cpu-clock'));
for (const [name, set] of [
  ['main thread', cpu.filter((s) => s.tid === PID)],
  ['other threads', cpu.filter((s) => s.tid !== PID)],
] as const) {
  const by = new Map<string, number>();
  for (const s of set) {
    const cat = s.frames.map((f) => CATEGORIES.find(([, re]) => re.test(f))?.[0]).find((c) => c !== undefined) ?? 'other native';
    by.set(cat, (by.get(cat) ?? 0) + 1);
  }
  console.log(`${name}: ${perFrame(set.length)} µs per frame`);
  for (const [cat, n] of [...by].sort((a, b) => b[1] - a[1])) console.log(`  ${cat.padEnd(40)} ${perFrame(n).padStart(7)}`);
}
const calls = new Map<string, number>();
for (const s of samples) if (!s.event.startsWith('cpu-clock')) calls.set(s.event, (calls.get(s.event) ?? 0) + 1);
console.log(
  `syscalls per frame: ${[...calls].map(([e, n]) => `${e.replace('syscalls:sys_enter_', '')} ${(n / FRAMES).toFixed(3)}`).join(', ')}`,
);
