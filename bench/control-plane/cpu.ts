// `npm run bench -- control-plane:cpu`: CPU time of the control plane's process per request (utime + stime from /proc) at a fixed
// request rate, for `GET /v1/models` and `POST /v1/voice/sessions`, beside the bare express handler. A loaded
// machine moves this far less than throughput: compare builds A/B with `--builds=<service dir>,<service dir>`
// (e.g. a detached worktree of main as the first), run interleaved, several rounds.
// Options: --builds=<dirs> (default: this one) --rate=800 --seconds=4 --warmup=2 --rounds=5; BENCH_CP_NODE_ARGS;
// a build written `<dir>#<node args>` (e.g. `.#--max-semi-space-size=64`) runs with those node flags as well.
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { connectBus } from '@s2s/bus';
import { busSubjects } from '@s2s/contract';
import { createTestDatabase } from '@s2s/db/testing';
import { baselineServer, constantRate, controlPlaneDir, mintBenchKey, startServer, stop, type Started } from './harness.js';

const flag = (name: string) => process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
const BUILDS = (flag('builds') ?? controlPlaneDir).split(',').filter(Boolean);
const RATE = Number(flag('rate') ?? 800);
const SECONDS = Number(flag('seconds') ?? 4);
const WARMUP = Number(flag('warmup') ?? 2);
const ROUNDS = Number(flag('rounds') ?? 5);
// BENCH_CP_NODE_ARGS, e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof", profiles the control planes (as in bench.ts).
const CP_NODE_ARGS = process.env.BENCH_CP_NODE_ARGS ?? '';
// Linux's USER_HZ: /proc reports CPU time in 1/100 s.
const TICK_US = 10_000;

/** utime + stime of a process, in µs. */
function cpuMicros(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // Fields 14 and 15 of stat(5), counted from the state (field 3) here.
  return (Number(fields[11]) + Number(fields[12])) * TICK_US;
}

interface Target {
  name: string;
  server: Started;
  models?: string;
  create?: { url: string; init: { method: string; headers: Record<string, string>; body: string } };
  bare?: string;
}

const testDb = await createTestDatabase();
const prefixes: string[] = [];
const targets: Target[] = [];
try {
  targets.push({ name: 'bare express', server: await startServer([baselineServer], {}), bare: '/' });
  for (const [i, build] of BUILDS.entries()) {
    const [dir = '', buildArgs = ''] = build.split('#');
    const nodeArgs = [CP_NODE_ARGS, buildArgs].filter(Boolean).join(' ');
    const prefix = `benchcpu_${randomBytes(4).toString('hex')}`;
    prefixes.push(prefix);
    const server = await startServer(
      ['--import', '@s2s/telemetry/register', 'src/main.ts'],
      {
        NODE_ENV: 'development',
        DATABASE_URL: testDb.url,
        BUS_PREFIX: prefix,
        HTTP_PORT: '0',
        ADMIN_TOKEN: 'bench-admin-token',
        LOG_LEVEL: 'info',
        ...(nodeArgs ? { NODE_ARGS: nodeArgs } : {}),
      },
      dir,
    );
    const url = `http://127.0.0.1:${server.port}`;
    const key = await mintBenchKey(url);
    targets.push({
      name: `build ${i + 1} (${build})`,
      server,
      models: `${url}/v1/models`,
      create: {
        url: `${url}/v1/voice/sessions`,
        init: {
          method: 'POST',
          headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
          body: JSON.stringify({ model: 'local/echo-1', mode: 'speech_to_speech' }),
        },
      },
    });
  }

  const get = (url: string) => ({ url, init: { method: 'GET', headers: {}, body: '' } });
  /** µs of the server's CPU per request sent, at RATE for SECONDS after a warm-up. */
  async function measure(t: Target, phase: { url: string; init: { method: string; headers: Record<string, string>; body: string } }) {
    await testDb.db.pool.query('VACUUM wallets');
    await constantRate(phase.url, phase.init, RATE, WARMUP);
    const before = cpuMicros(t.server.child.pid!);
    const r = await constantRate(phase.url, phase.init, RATE, SECONDS);
    const used = cpuMicros(t.server.child.pid!) - before;
    if (r.failed) console.error(`${t.name}: ${r.failed} failed answers`);
    return { usPerRequest: used / r.sent, p50: r.p50, p99: r.p99 };
  }

  const rows: { round: number; target: string; phase: string; us: number; p50: number; p99: number; load: number }[] = [];
  console.log(`control-plane CPU per request: ${RATE} req/s, ${SECONDS} s after ${WARMUP} s, ${ROUNDS} rounds, builds interleaved`);
  for (let round = 1; round <= ROUNDS; round++) {
    // Each round starts with another target, so none is always measured first.
    const order = targets.map((_, i) => targets[(i + round) % targets.length]!);
    for (const t of order) {
      const phases: [string, ReturnType<typeof get>][] = [];
      if (t.bare) phases.push(['bare GET', get(`http://127.0.0.1:${t.server.port}${t.bare}`)]);
      if (t.models) phases.push(['GET /v1/models', get(t.models)]);
      if (t.create) phases.push(['POST /v1/voice/sessions', t.create]);
      for (const [phase, p] of phases) {
        const m = await measure(t, p);
        const load = loadavg()[0]!;
        rows.push({ round, target: t.name, phase, us: m.usPerRequest, p50: m.p50, p99: m.p99, load });
        console.log(
          `round ${round} | ${t.name} | ${phase} | ${m.usPerRequest.toFixed(0)} µs/req | p50 ${m.p50} ms | p99 ${m.p99} ms | load ${load.toFixed(2)}`,
        );
      }
    }
  }

  const median = (xs: number[]) => {
    const s = [...xs].sort((a, b) => a - b);
    return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
  };
  const medianOf = (target: string, phase: string) => median(rows.filter((r) => r.target === target && r.phase === phase).map((r) => r.us));
  const bare = medianOf('bare express', 'bare GET');
  console.log(`\nmedians (µs of the server's CPU per request; bare express GET ${bare.toFixed(0)} µs):`);
  console.log('| build | GET /v1/models µs | vs bare | POST /v1/voice/sessions µs | vs bare |');
  console.log('|---|---:|---:|---:|---:|');
  for (const t of targets.filter((x) => x.models)) {
    const m = medianOf(t.name, 'GET /v1/models');
    const c = medianOf(t.name, 'POST /v1/voice/sessions');
    console.log(`| ${t.name} | ${m.toFixed(0)} | ${(m / bare).toFixed(2)} | ${c.toFixed(0)} | ${(c / bare).toFixed(2)} |`);
  }
  if (targets.length > 2) {
    // Paired per round: each later build against the first, round by round, then the median of those ratios.
    for (const t of targets.slice(2)) {
      for (const phase of ['GET /v1/models', 'POST /v1/voice/sessions']) {
        const ratios = [];
        for (let round = 1; round <= ROUNDS; round++) {
          const a = rows.find((r) => r.round === round && r.target === targets[1]!.name && r.phase === phase)!;
          const b = rows.find((r) => r.round === round && r.target === t.name && r.phase === phase)!;
          ratios.push(b.us / a.us);
        }
        console.log(
          `${t.name} / build 1, ${phase}: median of per-round ratios ${median(ratios).toFixed(2)} (${ratios.map((r) => r.toFixed(2)).join(', ')})`,
        );
      }
    }
  }
} finally {
  for (const t of targets) await stop(t.server);
  const bus = await connectBus({ url: process.env.NATS_URL ?? 'nats://127.0.0.1:4222', prefix: prefixes[0] ?? 'benchcpu' });
  for (const prefix of prefixes) await bus.jsm.streams.delete(busSubjects(prefix).stream).catch(() => {});
  await bus.close();
  await testDb.drop();
}
