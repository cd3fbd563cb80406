// A/B of the relay benchmark between two trees (issue 9's bound: relay CPU per frame within 5 % of a base commit).
// Runs the relay benchmark (bench.ts) alternately in tree A and tree B (A B B A A B …), each single run under `flock <lock>` so that
// other benchmarks interleave, reads each run's relay ÷ bare CPU-per-frame ratio per N, appends every run to a
// JSONL file, and prints per procedure (the BENCH_ variables) and N: every run, mean and SD per tree, and the ratio
// of geometric means B ÷ A with a 95 % Welch t interval on the logs and a bootstrap interval as a cross-check.
// Runs where the relay fell behind (frames/s under 0.98 × the pass-through's, or frames lost) are reported and
// the result is given with and without them.
// Usage: cd bench && BENCH_SESSIONS=… npx tsx relay/ab.ts --a=<tree> --b=<tree> --runs=K
//   [--out=runs.jsonl] [--pool=f1.jsonl,f2.jsonl] [--lock=<file>, default <tmpdir>/s2s-bench.lock] [--bound=1.05]
// Every BENCH_ variable of the environment goes to bench.ts. --runs=0 with --pool only reports.
// --paired: K runs of `bench.ts --compare=<a>` in tree B instead (both relays and the pass-through in alternated
// windows of each run, B's bench.ts driving), each under the lock; reports B ÷ A per N pooled over the runs of the
// same trees and procedure, the run being the unit (bench/relay/ab-stats.ts pairedSummary; docs/benchmarks.md, "Relay: two trees compared, paired").
// e.g. npx tsx relay/ab.ts --paired --a=<base tree> --b=<this tree> --runs=12 --lock=<lock file>
//   --out=paired.jsonl -- --sessions=50,100,200 --rounds=2 --seconds=3 --warmup=2 --prime=10 --nice=-10
// (what follows `--` goes to bench.ts).
import { spawn } from 'node:child_process';
import { appendFileSync, existsSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { loadavg, treeCommit } from './tree.js';
import {
  bootstrapRatio,
  fellBehind,
  mean,
  pairedSummary,
  parseBenchOutput,
  sd,
  verdict,
  welchRatio,
  type PairedRecord,
  type RunRecord,
} from './ab-stats.js';

const { values: opt, positionals: benchArgs } = parseArgs({
  options: {
    a: { type: 'string' },
    b: { type: 'string' },
    runs: { type: 'string' },
    out: { type: 'string' },
    pool: { type: 'string' },
    lock: { type: 'string' },
    bound: { type: 'string' },
    paired: { type: 'boolean' },
  },
  allowPositionals: true,
});
const PAIRED = opt.paired === true;
const RUNS = Number(opt.runs ?? 0);
const BOUND = Number(opt.bound ?? 1.05);
// The lock every benchmark of a shared machine takes (one at a time); by default one per machine in its temp dir.
const LOCK = opt.lock ?? join(tmpdir(), 's2s-bench.lock');
const OUT = resolve(opt.out ?? `ab-${new Date().toISOString().replace(/[:.]/g, '-')}.jsonl`);

/**
 * How a tree runs its relay benchmark: bench/relay/bench.ts, or `npm run bench` in services/relay in a tree from
 * before the benchmarks left the services.
 */
function benchIn(dir: string): { cwd: string; command: string[]; env: NodeJS.ProcessEnv } {
  if (!existsSync(`${dir}/bench/relay/bench.ts`))
    return { cwd: `${dir}/services/relay`, command: ['npm', 'run', '--silent', 'bench', '--'], env: process.env };
  const nodeOptions = [process.env.NODE_OPTIONS, '--conditions=@s2s/source'].filter(Boolean).join(' ');
  return {
    cwd: `${dir}/bench`,
    command: ['node', '--import', 'tsx', 'relay/bench.ts'],
    env: { ...process.env, NODE_OPTIONS: nodeOptions },
  };
}
const POOL = (opt.pool ?? '').split(',').filter(Boolean);
const procedure = Object.keys(process.env)
  .filter((k) => k.startsWith('BENCH_'))
  .sort()
  .map((k) => `${k}=${process.env[k]}`)
  .join(' ');

/** One bench.ts run in `dir`, under the lock; its stdout and stderr go to ours as they come. */
function runOnce(side: 'a' | 'b', dir: string): Promise<RunRecord> {
  return new Promise((done, fail) => {
    // The load and the start time are read once the lock is held, by the shell the lock runs.
    const bench = benchIn(dir);
    const script = 'echo "AB_START $(date -u +%FT%TZ) $(cut -d" " -f1 /proc/loadavg)"; exec "$@"';
    const child = spawn('flock', [LOCK, 'sh', '-c', script, 'sh', ...bench.command], {
      cwd: bench.cwd,
      env: bench.env,
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      process.stderr.write(d);
    });
    child.on('error', fail);
    child.on('close', (code) => {
      const rows = parseBenchOutput(out);
      if (code !== 0 || rows.length === 0) return fail(new Error(`bench.ts in ${dir} exited ${code} with ${rows.length} rows`));
      const start = /AB_START (\S+) (\S+)/.exec(out);
      done({
        side,
        dir,
        commit: treeCommit(dir),
        procedure,
        startedAt: start?.[1] ?? '',
        endedAt: new Date().toISOString().slice(0, 19) + 'Z',
        loadStart: Number(start?.[2]),
        loadEnd: loadavg(),
        rows,
      });
    });
  });
}

const f2 = (x: number) => (Number.isFinite(x) ? x.toFixed(2) : 'n/a');
const f3 = (x: number) => (Number.isFinite(x) ? x.toFixed(3) : 'n/a');

function report(records: RunRecord[]): string {
  const lines: string[] = [];
  for (const proc of [...new Set(records.map((r) => r.procedure))]) {
    const recs = records.filter((r) => r.procedure === proc);
    const trees = (s: 'a' | 'b') => [...new Set(recs.filter((r) => r.side === s).map((r) => `${r.commit} (${r.dir})`))];
    lines.push(`## ${proc || '(bench.ts defaults)'}`, `A: ${trees('a').join(', ')}`, `B: ${trees('b').join(', ')}`, '');
    const ns = [...new Set(recs.flatMap((r) => r.rows.map((x) => x.n)))].sort((x, y) => x - y);
    for (const n of ns) {
      const runs = recs.flatMap((r) => r.rows.filter((x) => x.n === n).map((row) => ({ r, row })));
      lines.push(
        `### N = ${n}`,
        '',
        '| # | tree | started | load start/end | CPU µs/frame relay / bare | ratio | frames/s relay ÷ bare | lost relay / bare |',
        '|---|---|---|---|---|---|---|---|',
      );
      runs.forEach(({ r, row }, i) =>
        lines.push(
          `| ${i + 1} | ${r.side.toUpperCase()} | ${r.startedAt.slice(11, 19)} | ${f2(r.loadStart)} / ${f2(r.loadEnd)} | ` +
            `${row.cpuRelay} / ${row.cpuBare} | ${f3(row.ratio)} | ${f3(row.fpsRatio)}${fellBehind(row) ? ' **behind**' : ''} | ${row.lostRelay} / ${row.lostBare} |`,
        ),
      );
      lines.push('');
      const summarize = (label: string, keep: (row: (typeof runs)[number]['row']) => boolean) => {
        const a = runs.filter((x) => x.r.side === 'a' && keep(x.row)).map((x) => x.row.ratio);
        const b = runs.filter((x) => x.r.side === 'b' && keep(x.row)).map((x) => x.row.ratio);
        const side = (xs: number[]) =>
          `n ${xs.length}, mean ${f3(mean(xs))}, SD ${f3(sd(xs))}, geometric mean ${f3(Math.exp(mean(xs.map(Math.log))))}`;
        lines.push(`${label}: A ${side(a)}; B ${side(b)}`);
        if (a.length < 2 || b.length < 2) return lines.push('  (fewer than 2 runs on a side: no interval)');
        const w = welchRatio(a, b);
        const boot = bootstrapRatio(a, b);
        lines.push(
          `  B ÷ A (geometric means) ${f3(w.estimate)}, 95 % Welch CI ${f3(w.low)}–${f3(w.high)} (df ${w.df.toFixed(1)}), ` +
            `bootstrap ${f3(boot.low)}–${f3(boot.high)}; bound ${BOUND}: ${verdict(w, BOUND)}`,
        );
      };
      summarize('All runs', () => true);
      if (runs.some((x) => fellBehind(x.row))) summarize('Without the runs that fell behind', (row) => !fellBehind(row));
      lines.push('');
    }
  }
  return lines.join('\n');
}

const readJsonl = (file: string): (RunRecord | PairedRecord)[] =>
  existsSync(file)
    ? readFileSync(file, 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as RunRecord | PairedRecord)
    : [];
const isPaired = (r: RunRecord | PairedRecord): r is PairedRecord => 'kind' in r && r.kind === 'paired';

/** One `bench.ts --compare=<a>` run in tree `b`, under the lock, appending its windows to OUT. */
function runPaired(a: string, b: string): Promise<void> {
  return new Promise((done, fail) => {
    const bench = benchIn(b);
    const child = spawn('flock', [LOCK, ...bench.command, `--compare=${a}`, `--compare-out=${OUT}`, ...benchArgs], {
      cwd: bench.cwd,
      env: bench.env,
      stdio: ['ignore', process.stderr, 'inherit'],
    });
    child.on('error', fail);
    child.on('close', (code) => (code === 0 ? done() : fail(new Error(`bench.ts --compare in ${b} exited ${code}`))));
  });
}

function pairedReport(records: PairedRecord[]): string {
  const lines: string[] = [];
  const groups = new Map<string, PairedRecord[]>();
  for (const r of records) {
    const key = `B ${r.thisTree.commit}, A ${r.otherTree.commit}; ${r.procedure}`;
    groups.set(key, [...(groups.get(key) ?? []), r]);
  }
  for (const [key, recs] of groups) {
    lines.push(`## ${key}`, `B (this, its bench.ts ran): ${recs[0]!.thisTree.dir}; A (other): ${recs[0]!.otherTree.dir}`, '');
    const ns = [...new Set(recs.flatMap((r) => r.windows.map((w) => w.n)))].sort((x, y) => x - y);
    for (const n of ns) {
      const s = pairedSummary(recs, n);
      lines.push(
        `### N = ${n}`,
        '',
        '| # | started | load start/end | rounds | B ÷ bare | A ÷ bare | B ÷ A | 95 % within the run | SD of ln(B ÷ A) per round |',
        '|---|---|---|---|---|---|---|---|---|',
      );
      s.runs.forEach((run, i) => {
        const r = recs[i]!;
        lines.push(
          `| ${i + 1} | ${r.startedAt.slice(11, 19)} | ${f2(r.loadStart)} / ${f2(r.loadEnd)} | ${run.thisOther.count} | ${f3(run.thisBare)} | ` +
            `${f3(run.otherBare)} | ${f3(run.thisOther.estimate)} | ${f3(run.thisOther.low)}–${f3(run.thisOther.high)} | ${f3(run.thisOther.sd)} |`,
        );
      });
      const p = s.pooled;
      lines.push(
        '',
        `${s.runs.length} run(s): B ÷ bare ${f3(s.thisBare)}, A ÷ bare ${f3(s.otherBare)} (geometric means); ` +
          `SD of ln(B ÷ A) per round (within runs) ${f3(s.sdPerWindow)}, per run ${f3(s.sdPerRun)}`,
        `  B ÷ A ${f3(p.estimate)}, 95 % ${p.withinRun ? 'within the one run (t over its rounds)' : `t over runs (df ${p.df})`} ` +
          `${f3(p.low)}–${f3(p.high)}; bound ${BOUND}: ${p.withinRun ? `${verdict(p, BOUND)} for these two processes only` : verdict(p, BOUND)}`,
        '',
      );
    }
  }
  return lines.join('\n');
}

const loadRecords = () => [
  ...POOL.flatMap((f) => readJsonl(resolve(f))),
  ...(POOL.map((f) => resolve(f)).includes(OUT) ? [] : readJsonl(OUT)),
];
if (PAIRED) {
  if (RUNS > 0) {
    if (!opt.a || !opt.b) throw new Error('--a=<tree> and --b=<tree> are required with --runs');
    const [a, b] = [resolve(opt.a), resolve(opt.b)];
    process.stderr.write(
      `ab: ${RUNS} paired runs, bench.ts of B ${b} (${treeCommit(b)}) against A ${a} (${treeCommit(a)}); runs to ${OUT}\n`,
    );
    for (let i = 0; i < RUNS; i++) await runPaired(a, b);
  }
  process.stdout.write(`${pairedReport(loadRecords().filter(isPaired))}\n`);
  process.exit(0);
}
const records = loadRecords().filter((r): r is RunRecord => !isPaired(r));
if (RUNS > 0) {
  if (!opt.a || !opt.b) throw new Error('--a=<tree> and --b=<tree> are required with --runs');
  const dirs = { a: resolve(opt.a), b: resolve(opt.b) };
  process.stderr.write(
    `ab: ${RUNS} runs per tree, A ${dirs.a} (${treeCommit(dirs.a)}), B ${dirs.b} (${treeCommit(dirs.b)}); runs to ${OUT}\n`,
  );
  for (let i = 0; i < RUNS; i++) {
    for (const side of i % 2 === 0 ? (['a', 'b'] as const) : (['b', 'a'] as const)) {
      const rec = await runOnce(side, dirs[side]);
      appendFileSync(OUT, `${JSON.stringify(rec)}\n`);
      records.push(rec);
      process.stderr.write(
        `ab: run ${i + 1} ${side.toUpperCase()}: ${rec.rows.map((x) => `N=${x.n} ${f3(x.ratio)}`).join(', ')} (load ${rec.loadStart})\n`,
      );
    }
  }
}
process.stdout.write(`${report(records)}\n`);
