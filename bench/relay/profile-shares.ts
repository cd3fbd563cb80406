// Shares of a relay CPU profile (.cpuprofile from BENCH_RELAY_NODE_ARGS="--cpu-prof ...") spent in the
// per-second checkpoint work, inclusive of callees, of the non-idle samples after the first SKIP_S seconds
// (default 5: start-up and warm-up). git log -p docs/benchmarks.md, "2026-11-27".
//   node --import tsx bench/relay/profile-shares.ts <file.cpuprofile>
import { readFileSync } from 'node:fs';

interface Frame {
  functionName: string;
  url: string;
}
interface ProfileNode {
  id: number;
  callFrame: Frame;
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

const file = process.argv[2];
if (!file) throw new Error('usage: profile-shares.ts <file.cpuprofile>');
const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile;
const skipUs = Number(process.env.SKIP_S ?? 5) * 1e6;

const groups: Record<string, (f: Frame) => boolean> = {
  'checkpoints.ts (inclusive)': (f) => f.url.endsWith('relay/src/metering/checkpoints.ts'),
  'acked-publish.ts (inclusive)': (f) => f.url.endsWith('bus/src/hot/acked-publish.ts'),
  'bus encodeMessage': (f) => f.functionName === 'encodeMessage',
  'bus traceHeaders': (f) => f.functionName === 'traceHeaders' && f.url.includes('bus/src'),
  'nats RequestError / RequestOne': (f) => f.functionName === 'RequestError' || f.url.endsWith('nats-core/lib/request.js'),
  'nats js.publish (jsclient)': (f) => f.url.endsWith('jetstream/lib/jsclient.js'),
  'nats flushPending (socket writes)': (f) => f.functionName === 'flushPending',
  'telemetry published': (f) => f.functionName === 'published' && f.url.endsWith('relay/src/telemetry.ts'),
  'lease.ts': (f) => f.url.endsWith('relay/src/lease.ts'),
  'garbage collector': (f) => f.functionName === '(garbage collector)',
};
const work = [
  'checkpoints.ts (inclusive)',
  'acked-publish.ts (inclusive)',
  'nats RequestError / RequestOne',
  'nats js.publish (jsclient)',
  'nats flushPending (socket writes)',
  'bus encodeMessage',
];
groups['all of the checkpoint work'] = (f) => work.some((k) => groups[k]!(f));

const byId = new Map(profile.nodes.map((n) => [n.id, n]));
const parent = new Map<number, number>();
for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
const time = new Map<number, number>();
let at = 0;
profile.samples.forEach((id, i) => {
  const dt = profile.timeDeltas[i] ?? 0;
  at += dt;
  if (at >= skipUs) time.set(id, (time.get(id) ?? 0) + dt);
});
let busy = 0;
const sums = new Map(Object.keys(groups).map((k) => [k, 0]));
for (const [id, t] of time) {
  if (byId.get(id)?.callFrame.functionName === '(idle)') continue;
  busy += t;
  const hit = new Set<string>();
  for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) {
    const frame = byId.get(cur)?.callFrame;
    if (frame) for (const [k, match] of Object.entries(groups)) if (match(frame)) hit.add(k);
  }
  for (const k of hit) sums.set(k, (sums.get(k) ?? 0) + t);
}
console.log(`non-idle after ${skipUs / 1e6} s: ${(busy / 1e6).toFixed(2)} s`);
for (const [k, t] of sums) console.log(`${((100 * t) / busy).toFixed(2).padStart(6)} %  ${k}`);
