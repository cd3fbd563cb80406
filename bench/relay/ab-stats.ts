// Pure parts of ab.ts: reading one bench.ts run's table, and the statistics of two trees' runs (ratio of
// geometric means with a Welch t interval on the logs, and a seeded percentile bootstrap as a cross-check).
// The Student t distribution comes from jStat; what is left here is the procedure, not special functions.
import jStat from 'jstat';

/** One N of one bench.ts run (ROUNDS=1, so the row is that run's own figures). */
export interface RunRow {
  n: number;
  cpuRelay: number;
  cpuBare: number;
  /** CPU µs per frame, relay ÷ bare pass-through, of the same run. */
  ratio: number;
  fpsRelay: number;
  fpsBare: number;
  fpsRatio: number;
  lostRelay: number;
  lostBare: number;
}

/** One bench.ts run as ab.ts writes it to its JSONL file. */
export interface RunRecord {
  side: 'a' | 'b';
  dir: string;
  commit: string;
  /** The BENCH_ variables of the run, `K=V` sorted and space-joined: runs are pooled per procedure. */
  procedure: string;
  startedAt: string;
  endedAt: string;
  /** 1-minute load averages when the run got the lock and when it ended. */
  loadStart: number;
  loadEnd: number;
  rows: RunRow[];
}

const num = (s: string | undefined): number => (s === undefined || s === 'n/a' ? NaN : Number(s.replace(/,/g, '')));

/** The table rows of bench.ts's stdout: `| N | fps relay / bare (r) | cpu relay / bare (r) | … | lost relay / bare |`. */
export function parseBenchOutput(text: string): RunRow[] {
  const rows: RunRow[] = [];
  for (const line of text.split('\n')) {
    if (!/^\| \d+ \|/.test(line)) continue;
    const cells = line
      .split('|')
      .slice(1, -1)
      .map((c) => c.trim());
    const pair = (cell: string | undefined) => {
      const m = /^([\d.,]+|n\/a) \/ ([\d.,]+|n\/a)/.exec(cell ?? '');
      return m ? [num(m[1]), num(m[2])] : [NaN, NaN];
    };
    const [fpsRelay, fpsBare] = pair(cells[1]) as [number, number];
    const [cpuRelay, cpuBare] = pair(cells[2]) as [number, number];
    const [lostRelay, lostBare] = pair(cells[cells.length - 1]) as [number, number];
    rows.push({
      n: Number(cells[0]),
      cpuRelay,
      cpuBare,
      ratio: cpuRelay / cpuBare,
      fpsRelay,
      fpsBare,
      fpsRatio: fpsRelay / fpsBare,
      lostRelay,
      lostBare,
    });
  }
  return rows;
}

/** A run fell behind when the relay carried under 98 % of the pass-through's frames/s or lost frames. */
export const fellBehind = (r: RunRow): boolean => !(r.fpsRatio >= 0.98) || r.lostRelay > 0;

export const mean = (xs: readonly number[]): number => jStat.mean([...xs]);

/** Sample standard deviation (n − 1); NaN under two values. */
export function sd(xs: readonly number[]): number {
  return xs.length < 2 ? NaN : jStat.stdev([...xs], true);
}

/** Student t CDF with `df` (real, > 0) degrees of freedom. */
export const tCdf = (t: number, df: number): number => jStat.studentt.cdf(t, df);

/** Student t quantile (p in (0, 1)); jStat inverts the incomplete beta to about 1e-8 relative. */
export const tQuantile = (p: number, df: number): number => jStat.studentt.inv(p, df);

export interface Interval {
  estimate: number;
  low: number;
  high: number;
}

export interface WelchResult extends Interval {
  df: number;
  /** Standard error of the difference of the log means. */
  se: number;
}

/**
 * Ratio of geometric means b ÷ a with a `level` confidence interval: Welch's t interval on the difference of the
 * mean logs, exponentiated. Needs two or more values on each side.
 */
export function welchRatio(a: readonly number[], b: readonly number[], level = 0.95): WelchResult {
  const la = a.map(Math.log);
  const lb = b.map(Math.log);
  const va = sd(la) ** 2 / la.length;
  const vb = sd(lb) ** 2 / lb.length;
  const diff = mean(lb) - mean(la);
  const se = Math.sqrt(va + vb);
  const df = (va + vb) ** 2 / (va ** 2 / (la.length - 1) + vb ** 2 / (lb.length - 1));
  const q = tQuantile(1 - (1 - level) / 2, df);
  return { estimate: Math.exp(diff), low: Math.exp(diff - q * se), high: Math.exp(diff + q * se), df, se };
}

/** mulberry32: a small seeded PRNG, so that a bootstrap prints the same interval for the same runs. */
export function seededRandom(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Percentile bootstrap of the ratio of geometric means b ÷ a, each side resampled with replacement. */
export function bootstrapRatio(a: readonly number[], b: readonly number[], { level = 0.95, resamples = 10000, seed = 1 } = {}): Interval {
  const la = a.map(Math.log);
  const lb = b.map(Math.log);
  const rnd = seededRandom(seed);
  const resampledMean = (xs: number[]) => {
    let s = 0;
    for (let i = 0; i < xs.length; i++) s += xs[Math.floor(rnd() * xs.length)]!;
    return s / xs.length;
  };
  const diffs = Float64Array.from({ length: resamples }, () => resampledMean(lb) - resampledMean(la)).sort();
  const at = (p: number) => diffs[Math.min(resamples - 1, Math.max(0, Math.round(p * (resamples - 1))))]!;
  return {
    estimate: Math.exp(mean(lb) - mean(la)),
    low: Math.exp(at((1 - level) / 2)),
    high: Math.exp(at(1 - (1 - level) / 2)),
  };
}

/** The bound is shown met when the interval's upper end is ≤ `bound`, missed when its lower end is above it. */
export function verdict(ci: Interval, bound = 1.05): 'met' | 'missed' | 'not resolved' {
  if (ci.high <= bound) return 'met';
  if (ci.low > bound) return 'missed';
  return 'not resolved';
}

// ---- paired runs (bench.ts --compare): both relays and the pass-through in alternated windows of one run ----

export type PairedSide = 'bare' | 'this' | 'other';

/** One measured window of a paired run: one server's CPU per frame under N sessions. */
export interface PairedWindow {
  n: number;
  /** Round of that N (0-based); a round holds one window of each side. */
  round: number;
  side: PairedSide;
  /** CPU µs per frame of that side's server processes. */
  cpu: number;
  /** Frames per second the load received back. */
  fps: number;
  lost: number;
}

/** One bench.ts --compare run as it appends itself to its JSONL file (--compare-out). */
export interface PairedRecord {
  kind: 'paired';
  /** The tree whose bench.ts ran (its relay is "this") and the compared tree ("other"). */
  thisTree: { dir: string; commit: string };
  otherTree: { dir: string; commit: string };
  /** The BENCH_ variables and options of the run but the tree and the output file: runs are pooled per procedure. */
  procedure: string;
  startedAt: string;
  endedAt: string;
  loadStart: number;
  loadEnd: number;
  windows: PairedWindow[];
}

/** The order of the windows of round `r`: palindromic pairs, the relay in the middle alternating every pair,
 * so that over 4 rounds every side's mean position is the same (a linear drift cancels) and each relay follows
 * the pass-through and the other relay equally often. */
export function roundOrder(r: number): PairedSide[] {
  const middle: PairedSide[] = Math.floor(r / 2) % 2 === 0 ? ['this', 'other'] : ['other', 'this'];
  const forward: PairedSide[] = ['bare', ...middle];
  return r % 2 === 0 ? forward : [...forward].reverse();
}

/** Per round of one N: ln(this ÷ bare), ln(other ÷ bare) and ln(this ÷ other), rounds with all three windows. */
export function roundLogRatios(
  windows: readonly PairedWindow[],
  n: number,
): { thisBare: number[]; otherBare: number[]; thisOther: number[] } {
  const byRound = new Map<number, Partial<Record<PairedSide, number>>>();
  for (const w of windows) {
    if (w.n !== n) continue;
    const r = byRound.get(w.round) ?? {};
    r[w.side] = w.cpu;
    byRound.set(w.round, r);
  }
  const out = { thisBare: [] as number[], otherBare: [] as number[], thisOther: [] as number[] };
  for (const [, r] of [...byRound].sort((x, y) => x[0] - y[0])) {
    if (!(r.bare! > 0 && r.this! > 0 && r.other! > 0)) continue;
    out.thisBare.push(Math.log(r.this! / r.bare!));
    out.otherBare.push(Math.log(r.other! / r.bare!));
    out.thisOther.push(Math.log(r.this! / r.other!));
  }
  return out;
}

export interface MeanInterval extends Interval {
  /** Number of values, degrees of freedom (n − 1), SD of the values (logs) and standard error of their mean. */
  count: number;
  df: number;
  sd: number;
  se: number;
}

/** exp of the mean of `logs` with a one-sample t interval on that mean, exponentiated (NaN ends under 2 values). */
export function expMeanInterval(logs: readonly number[], level = 0.95): MeanInterval {
  const m = mean(logs);
  const s = sd(logs);
  const se = s / Math.sqrt(logs.length);
  const df = logs.length - 1;
  const q = df >= 1 ? tQuantile(1 - (1 - level) / 2, df) : NaN;
  return { estimate: Math.exp(m), low: Math.exp(m - q * se), high: Math.exp(m + q * se), count: logs.length, df, sd: s, se };
}

export interface PairedSummary {
  n: number;
  /** Per run: its rounds' ln(this ÷ other) as a geometric mean with the within-run interval, and both relays ÷ bare. */
  runs: { thisOther: MeanInterval; thisBare: number; otherBare: number }[];
  /**
   * this ÷ other over runs: the run is the unit (its relays' JIT state is shared by its windows), so the
   * interval is a one-sample t on the runs' mean logs, df = runs − 1. With one run it is that run's
   * within-run interval (`withinRun` true), which speaks for those two processes only.
   */
  pooled: MeanInterval & { withinRun: boolean };
  /** SD of ln(this ÷ other) per window (round), pooled within runs, and per run (of the runs' means). */
  sdPerWindow: number;
  sdPerRun: number;
  thisBare: number;
  otherBare: number;
}

/** Statistics of one N over paired runs of the same trees and procedure. */
export function pairedSummary(records: readonly PairedRecord[], n: number, level = 0.95): PairedSummary {
  const runs = records
    .map((rec) => roundLogRatios(rec.windows, n))
    .filter((r) => r.thisOther.length > 0)
    .map((r) => ({
      thisOther: expMeanInterval(r.thisOther, level),
      thisBare: Math.exp(mean(r.thisBare)),
      otherBare: Math.exp(mean(r.otherBare)),
    }));
  const runLogs = runs.map((r) => Math.log(r.thisOther.estimate));
  const pooled = runs.length === 1 ? { ...runs[0]!.thisOther, withinRun: true } : { ...expMeanInterval(runLogs, level), withinRun: false };
  // Pooled within-run variance: Σ (k − 1) s² / Σ (k − 1) over runs with two or more rounds.
  const within = runs.filter((r) => r.thisOther.count > 1);
  const dfSum = within.reduce((s, r) => s + r.thisOther.df, 0);
  const sdPerWindow = Math.sqrt(within.reduce((s, r) => s + r.thisOther.df * r.thisOther.sd ** 2, 0) / dfSum);
  return {
    n,
    runs,
    pooled,
    sdPerWindow,
    sdPerRun: sd(runLogs),
    thisBare: Math.exp(mean(runs.map((r) => Math.log(r.thisBare)))),
    otherBare: Math.exp(mean(runs.map((r) => Math.log(r.otherBare)))),
  };
}
