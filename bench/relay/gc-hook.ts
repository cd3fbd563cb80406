// Benchmark-only preload (with --expose-gc): SIGUSR2 runs a full GC and prints the settled memory figures
// as one JSON line, so the benchmark reads RSS and retained heap of a process without an endpoint for it.
process.on('SIGUSR2', () => {
  (globalThis as { gc?: () => void }).gc?.();
  setTimeout(() => {
    (globalThis as { gc?: () => void }).gc?.();
    const m = process.memoryUsage();
    process.stdout.write(`${JSON.stringify({ bench_memory: { rss: m.rss, heapUsed: m.heapUsed, external: m.external } })}\n`);
  }, 200);
});
