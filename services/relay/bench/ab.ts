// A/B of the relay benchmark between two trees (issue 9's bound: relay CPU per frame within 5 % of a base commit).
// Runs bench/bench.ts alternately in tree A and tree B (A B B A A B …), each single run under `flock <lock>` so that
// other benchmarks interleave, reads each run's relay ÷ bare CPU-per-frame ratio per N, appends every run to a
// JSONL file, and prints per procedure (the BENCH_ variables) and N: every run, mean and SD per tree, and the ratio
// of geometric means B ÷ A with a 95 % Welch t interval on the logs and a bootstrap interval as a cross-check.
// Runs where the relay fell behind (frames/s under 0.98 × the pass-through's, or frames lost) are reported and
// the result is given with and without them.
// Usage: cd services/relay && BENCH_SESSIONS=… npx tsx bench/ab.ts --a=<tree> --b=<tree> --runs=K
//   [--out=runs.jsonl] [--pool=f1.jsonl,f2.jsonl] [--lock=<file>, default <tmpdir>/s2s-bench.lock] [--bound=1.05]
// Every BENCH_ variable of the environment goes to bench.ts. --runs=0 with --pool only reports.
import { execFileSync, spawn } from 'node:child_process';
import { appendFileSync, existsSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { bootstrapRatio, fellBehind, mean, parseBenchOutput, sd, verdict, welchRatio, type RunRecord } from './ab-stats.js';

const { values: opt } = parseArgs({
  options: Object.fromEntries(['a', 'b', 'runs', 'out', 'pool', 'lock', 'bound'].map((k) => [k, { type: 'string' as const }])),
});
const RUNS = Number(opt.runs ?? 0);
const BOUND = Number(opt.bound ?? 1.05);
// The lock every benchmark of a shared machine takes (one at a time); by default one per machine in its temp dir.
const LOCK = opt.lock ?? join(tmpdir(), 's2s-bench.lock');
const OUT = resolve(opt.out ?? `ab-${new Date().toISOString().replace(/[:.]/g, '-')}.jsonl`);
const POOL = (opt.pool ?? '').split(',').filter(Boolean);
const procedure = Object.keys(process.env)
  .filter((k) => k.startsWith('BENCH_'))
  .sort()
  .map((k) => `${k}=${process.env[k]}`)
  .join(' ');

const loadavg = () => Number(readFileSync('/proc/loadavg', 'utf8').split(' ')[0]);
const treeCommit = (dir: string) => {
  const head = execFileSync('git', ['-C', dir, 'rev-parse', '--short', 'HEAD']).toString().trim();
  const dirty = execFileSync('git', ['-C', dir, 'status', '--porcelain', '--untracked-files=no']).toString().trim();
  return dirty ? `${head}+changes` : head;
};

/** One bench.ts run in `dir`, under the lock; its stdout and stderr go to ours as they come. */
function runOnce(side: 'a' | 'b', dir: string): Promise<RunRecord> {
  return new Promise((done, fail) => {
    // The load and the start time are read once the lock is held, by the shell the lock runs.
    const script = 'echo "AB_START $(date -u +%FT%TZ) $(cut -d" " -f1 /proc/loadavg)"; exec npm run --silent bench';
    const child = spawn('flock', [LOCK, 'sh', '-c', script], {
      cwd: `${dir}/services/relay`,
      env: process.env,
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

const readJsonl = (file: string): RunRecord[] =>
  existsSync(file)
    ? readFileSync(file, 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as RunRecord)
    : [];

const records = [...POOL.flatMap((f) => readJsonl(resolve(f))), ...(POOL.map((f) => resolve(f)).includes(OUT) ? [] : readJsonl(OUT))];
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
