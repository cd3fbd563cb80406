// The continuity wrapper's retained input in isolation (git log -p docs/benchmarks.md, "Issue 13 item 1, continued"):
// N UpstreamSessions with continuity and manual turns, each appended F frames of 20 ms as the codec makes
// them (a fresh base64 string sliced from a JSON frame); prints heap, external memory, GC and CPU per frame.
// Usage: node --conditions=@s2s/source --import tsx bench/relay/retention.ts [N=200] [F=550] [junk]
// (`junk`: ~2.7 KB of other short-lived garbage per frame, as a real frame makes). To compare two trees, run
// the copy of this script in each.
import { PerformanceObserver, performance } from 'node:perf_hooks';
import { Audio, checkBase64, DEFAULT_CONTINUITY, UpstreamSession, UsageMeter, type UpstreamConnection } from '@s2s/relay/bench';

const N = Number(process.argv[2] ?? 200);
const F = Number(process.argv[3] ?? 550);
const JUNK = process.argv[4] === 'junk';
const noop = (): void => {};
// An upstream that ignores every request.
const upstream = Object.fromEntries(
  [
    'appendAudio',
    'commit',
    'clear',
    'createResponse',
    'cancelResponse',
    'updateSession',
    'createItem',
    'deleteItem',
    'truncateItem',
    'clearOutputAudio',
  ].map((k) => [k, noop]),
) as unknown as UpstreamConnection;
upstream.close = async () => {};
const connections = Array.from({ length: N }, () => {
  const c = new UpstreamSession(
    'local',
    new UsageMeter({ inputMsPerToken: 100, outputMsPerToken: 50 }, { provider: 'local', provider_model: 'echo-1' }),
    noop,
    undefined,
    {
      policy: { ...DEFAULT_CONTINUITY, maxConnectionMs: 0 },
      context: () => ({ settings: { turnDetection: null }, items: [] }),
      routes: [],
    },
  );
  c.nextGeneration();
  c.attach(upstream);
  return c;
});
const pcm = Buffer.from(Array.from({ length: 960 }, (_, i) => (i * 7) & 255));
const frame = Buffer.from(`{"type":"input_audio_buffer.append","audio":"${pcm.toString('base64')}"}`);
const start = frame.indexOf('"audio":"') + 9;
let gcMs = 0;
let gcs = 0;
new PerformanceObserver((list) => {
  for (const e of list.getEntries()) {
    gcMs += e.duration;
    gcs++;
  }
}).observe({ entryTypes: ['gc'] });
let sink = 0;
const cpu0 = process.cpuUsage();
const t0 = performance.now();
for (let f = 0; f < F; f++) {
  for (const c of connections) {
    const base64 = frame.toString('latin1', start, frame.length - 2);
    c.appendAudio(Audio.ofCheckedBase64(base64, checkBase64(base64)));
    if (JUNK) sink += (JSON.parse(frame.toString()) as { audio: string }).audio.length + Buffer.from(base64, 'latin1').length;
  }
}
const cpu = process.cpuUsage(cpu0);
const wallMs = performance.now() - t0;
await new Promise((resolve) => setTimeout(resolve, 50));
const frames = N * F;
const m = process.memoryUsage();
const mb = (x: number) => Number((x / 2 ** 20).toFixed(1));
console.log(
  JSON.stringify({
    frames,
    junk: JUNK,
    sink: sink > 0,
    wallMs: Math.round(wallMs),
    cpuUsPerFrame: Number(((cpu.user + cpu.system) / frames).toFixed(3)),
    gcs,
    gcPauseMs: Math.round(gcMs),
    heapMB: mb(m.heapUsed),
    externalMB: mb(m.external),
    rssMB: mb(m.rss),
  }),
);
