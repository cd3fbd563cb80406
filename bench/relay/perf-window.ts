// CPU per relayed frame of one measured run of bench.ts, by category, from a perf profile (git log -p docs/benchmarks.md,
// 2026-11-27, the unprimed N = 50 and session 13's relay against the pass-through). Record the relay and the
// pass-through of a run with BENCH_DEBUG=1 (bench.ts prints each measured window and its pid),
// BENCH_RELAY_NODE_ARGS=--perf-basic-prof and the same for the proxy:
//   perf record -k CLOCK_MONOTONIC -e cpu-clock -c 500000 -g -p <relay>,<proxy>
//   perf script --time <from>,<to> -F comm,pid,tid,time,event,ip,sym > w.txt
//   node --import tsx bench/relay/perf-window.ts w.txt <pid> <frames in the window> [<file> <pid> <frames>]...
// Several profiles (the relay's window and the pass-through's of the same run) print side by side.
// Each cpu-clock sample (500 µs) goes to the category of its innermost frame that has one, on the main thread
// or on V8's helper threads (TurboFan jobs, concurrent marking); kernel samples go to the system call they are
// under. Syscall tracepoint samples (-e syscalls:sys_enter_write ...), if recorded, are counted per frame; their
// call chains cost kernel time of their own, shown as "kernel: perf's own tracing" (record them in another run).
import { readFileSync } from 'node:fs';

const args = process.argv.slice(2);
if (args.length < 3 || args.length % 3 !== 0) throw new Error('usage: perf-window.ts <perf script output> <pid> <frames> [...]');
const SAMPLE_US = 500;

/** Innermost frame first; the first frame that matches a rule decides, rules in this order for each frame. */
const CATEGORIES: [string, RegExp][] = [
  [
    'GC',
    /Heap::|Scavenger|MarkCompact|ConcurrentMarking|MarkingBarrier|IncrementalMarking|Sweeper|MemoryAllocator|RecordWrite|heap::|GCTracer/,
  ],
  [
    'JIT (compile, deopt)',
    /Compiler|compiler::|Turbofan|Maglev|OptimizingCompileDispatcher|CompileLazy|BytecodeGenerator|Parser::|Deoptimiz/,
  ],
  ['UTF-8 validation', /validate_utf8|IsUtf8|isUtf8|isValidUTF8/],
  ['base64', /base64|Base64/],
  ['JSON', /Json|JSON/],
  [
    'string encode/decode (StringBytes, WriteToFlat, Utf8)',
    /StringBytes|WriteToFlat|WriteUtf8|Utf8Length|Utf8Decoder|String::Write|StringDecoder/,
  ],
  [
    'Buffer / ArrayBuffer creation',
    /ArrayBuffer::New|BackingStore|ArrayBufferAllocator|CreateTypedArray|TypedArray|JSArrayBuffer|node::Buffer::/,
  ],
  ['malloc / free', /malloc|calloc|_int_free|cfree|^free$|unlink_chunk|realloc|operator new|operator delete|tcache/],
  ['memcpy / memmove', /memmove|memcpy|memset/],
  ['microtasks, promises, nextTick', /RunMicrotasks|MicrotaskQueue|Promise|processTicksAndRejections|nextTick|AsyncFunction|Await/],
  ['timers, immediates', /listOnTimeout|processTimers|uv__run_timers|processImmediate|uv__run_check|node:internal\/timers/],
  ['JS: relay', /services\/relay\/src\//],
  ['JS: workspace packages', /packages\/[a-z-]+\/(src|dist)\//],
  ['JS: ws Receiver', /\/ws\/lib\/receiver/],
  ['JS: ws Sender', /\/ws\/lib\/sender/],
  ['JS: ws other', /\/ws\/lib\//],
  ['JS: nats', /@nats-io/],
  ['JS: node streams, net', /node:internal\/streams|stream_base_commons|node:net/],
  ['JS: node events', /node:events/],
  ['JS: node other', /node:|internal\//],
  ['JS: other (bench, pass-through)', /^(JS|LazyCompile|Function|Script):/],
  ['V8 runtime (Runtime_*)', /Runtime_/],
  ['V8 builtins (ICs, calls)', /Builtins_|Builtin:/],
  ['node C++ (StreamBase, callbacks)', /node::/],
  ['libuv', /^uv_|^uv__/],
  ['V8 API', /v8::/],
];

interface Frame {
  kernel: boolean;
  sym: string;
}

interface Sample {
  tid: number;
  event: string;
  frames: Frame[];
}

/** perf script prints one block per sample, a header line and then its frames, innermost first. */
function parse(text: string, pid: number): Sample[] {
  return text.split(/\n\s*\n/).flatMap((block) => {
    const [header = '', ...stack] = block.split('\n');
    const m = /^.+?\s+(\d+)\/(\d+)\s+[\d.]+:\s+(?:\d+\s+)?(\S+):/.exec(header.trimStart());
    if (!m || Number(m[1]) !== pid) return [];
    const frames = stack
      .map((l) => l.trim())
      .filter((t) => t.length > 0)
      .map((t) => ({ kernel: /^ffffffff/.test(t), sym: t.slice(t.indexOf(' ') + 1) }));
    return [{ tid: Number(m[2]), event: m[3] as string, frames }];
  });
}

/** A kernel sample by what put the thread there: the system call (its libc wrapper), a fault, an interrupt. */
function kernelCategory(frames: Frame[]): string {
  if (frames.some((f) => f.kernel && /perf_syscall_enter|perf_tp_event|perf_swevent/.test(f.sym))) return "kernel: perf's own tracing";
  const entry = frames.findIndex((f) => f.kernel && /entry_SYSCALL/.test(f.sym));
  if (entry >= 0) {
    const wrapper = frames[entry + 1]?.sym ?? '?';
    const name = /epoll_pwait|epoll_wait|epoll_ctl|writev|write|read|futex|mmap|munmap|madvise|mprotect|getpid|ioctl|clock_gettime/.exec(
      wrapper,
    )?.[0];
    return `kernel: ${name ?? wrapper}`;
  }
  if (frames.some((f) => f.kernel && /page_fault/.test(f.sym))) return 'kernel: page faults';
  return 'kernel: interrupts, other';
}

function categoryOf(s: Sample): string {
  if (s.frames[0]?.kernel) return kernelCategory(s.frames);
  for (const f of s.frames) {
    const cat = CATEGORIES.find(([, re]) => re.test(f.sym))?.[0];
    if (cat !== undefined) return cat;
  }
  return 'other native';
}

interface Profile {
  label: string;
  frames: number;
  main: Map<string, number>;
  other: Map<string, number>;
  mainTotal: number;
  otherTotal: number;
  calls: Map<string, number>;
}

function profile(file: string, pid: number, frames: number): Profile {
  const samples = parse(readFileSync(file, 'utf8'), pid);
  const p: Profile = {
    label: `${file.split('/').pop()} (${pid})`,
    frames,
    main: new Map(),
    other: new Map(),
    mainTotal: 0,
    otherTotal: 0,
    calls: new Map(),
  };
  for (const s of samples) {
    if (!s.event.startsWith('cpu-clock')) {
      const name = s.event.replace('syscalls:sys_enter_', '');
      p.calls.set(name, (p.calls.get(name) ?? 0) + 1);
      continue;
    }
    const main = s.tid === pid;
    const by = main ? p.main : p.other;
    const cat = categoryOf(s);
    by.set(cat, (by.get(cat) ?? 0) + 1);
    if (main) p.mainTotal++;
    else p.otherTotal++;
  }
  return p;
}

const profiles: Profile[] = [];
for (let i = 0; i < args.length; i += 3) profiles.push(profile(args[i] as string, Number(args[i + 1]), Number(args[i + 2])));
const perFrame = (p: Profile, n: number | undefined) => (((n ?? 0) * SAMPLE_US) / p.frames).toFixed(2).padStart(8);
const row = (label: string, cells: string[]) => console.log(`${label.padEnd(56)}${cells.join(' ')}`);

const header = profiles.map((_, i) => `#${i + 1}`.padStart(8));
/** The categories in a few groups (ws's Receiver and Sender and Node's stream code inline into each other differently per process). */
const GROUPS: [string, RegExp][] = [
  ['kernel: sends (write, writev)', /^kernel: (write|writev)$/],
  ['kernel: read', /^kernel: read$/],
  ['kernel: epoll_pwait', /^kernel: epoll_pwait$/],
  ["kernel: other (faults, irqs, futex, perf's own)", /^kernel: /],
  ['JS: ws, Node streams and net, other Node', /^JS: (ws|node)/],
  ['JS: relay and workspace packages', /^JS: (relay|workspace)/],
  ['JS: nats', /^JS: nats/],
  ['V8 builtins and runtime', /^V8 (builtins|runtime)/],
  ['V8 API, node C++, libuv', /^(V8 API|node C\+\+|libuv)/],
  ['malloc, Buffers, copies, strings, UTF-8', /malloc|Buffer|memcpy|string|base64|UTF-8|JSON/],
  ['GC', /^GC$/],
  ['JIT', /^JIT/],
  ['microtasks, timers', /microtasks|timers/],
];
const groupOf = (cat: string) => GROUPS.find(([, re]) => re.test(cat))?.[0] ?? 'other';
row('grouped, all threads (µs per frame)', header);
for (const g of [...GROUPS.map(([name]) => name), 'other']) {
  const n = (p: Profile) => [...p.main, ...p.other].filter(([c]) => groupOf(c) === g).reduce((sum, [, k]) => sum + k, 0);
  if (profiles.some((p) => n(p) > 0))
    row(
      `  ${g}`,
      profiles.map((p) => perFrame(p, n(p))),
    );
}
row('µs per frame', header);
row(
  'total',
  profiles.map((p) => perFrame(p, p.mainTotal + p.otherTotal)),
);
for (const thread of ['main', 'other'] as const) {
  row(
    `${thread === 'main' ? 'main thread' : 'other threads'}`,
    profiles.map((p) => perFrame(p, thread === 'main' ? p.mainTotal : p.otherTotal)),
  );
  const cats = new Map<string, number>();
  for (const p of profiles) for (const [c, n] of p[thread]) cats.set(c, Math.max(cats.get(c) ?? 0, (n * SAMPLE_US) / p.frames));
  for (const [c] of [...cats].sort((a, b) => b[1] - a[1]))
    row(
      `  ${c}`,
      profiles.map((p) => perFrame(p, p[thread].get(c))),
    );
}
const events = new Set(profiles.flatMap((p) => [...p.calls.keys()]));
if (events.size) {
  console.log('system calls per frame');
  for (const e of [...events].sort())
    row(
      `  ${e}`,
      profiles.map((p) => ((p.calls.get(e) ?? 0) / p.frames).toFixed(3).padStart(8)),
    );
}
profiles.forEach((p, i) => console.log(`#${i + 1}: ${p.label}, ${p.frames} frames`));
