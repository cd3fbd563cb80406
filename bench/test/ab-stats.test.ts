import t from 'tap';
import type { Test } from 'tap';
import {
  bootstrapRatio,
  expMeanInterval,
  fellBehind,
  pairedSummary,
  parseBenchOutput,
  roundLogRatios,
  roundOrder,
  sd,
  tCdf,
  tQuantile,
  verdict,
  welchRatio,
  type PairedRecord,
  type PairedWindow,
} from '../relay/ab-stats.js';

// Reference values from SciPy 1.17 (scipy.stats.t and ttest_ind(..., equal_var=False).confidence_interval()).
t.test('Student t quantiles and CDF (jStat) match SciPy', async (t) => {
  // jStat's quantile stops its Newton steps at 1e-8 relative; every interval is printed to three decimals.
  const close = (got: number, want: number, msg: string, rel = 1e-9) =>
    t.ok(Math.abs(got - want) < rel * Math.max(1, Math.abs(want)), `${msg}: ${got} ≈ ${want}`);
  close(tQuantile(0.975, 10), 2.228138851986274, 't(0.975, 10)', 1e-7);
  close(tQuantile(0.975, 1), 12.706204736174694, 't(0.975, 1)', 1e-7);
  close(tQuantile(0.975, 4.5), 2.6589123472044034, 't(0.975, 4.5)', 1e-7);
  close(tQuantile(0.025, 10), -2.228138851986274, 't(0.025, 10)', 1e-7);
  close(tCdf(1.5, 7.3), 0.912218453598457, 'CDF(1.5; 7.3)');
  close(tCdf(-1.5, 7.3), 1 - 0.912218453598457, 'CDF(-1.5; 7.3)');
});

t.test('Welch interval on the logs, exponentiated, matches SciPy', async (t) => {
  const a = [1.43, 1.34, 1.41, 1.45, 1.62, 1.28];
  const b = [1.5, 1.4, 1.54, 1.51, 1.47];
  const w = welchRatio(a, b);
  const close = (got: number, want: number, msg: string) => t.ok(Math.abs(got - want) < 1e-9, `${msg}: ${got} ≈ ${want}`);
  close(w.estimate, 1.0461196753887188, 'ratio of geometric means');
  close(w.low, 0.9601730526902924, 'lower end');
  close(w.high, 1.13975951748397, 'upper end');
  close(w.df, 7.223969600609347, 'Welch–Satterthwaite df');
  t.equal(verdict(w), 'not resolved');
  const swapped = welchRatio(b, a);
  close(swapped.estimate, 1 / w.estimate, 'swapping the sides inverts the ratio');
  close(swapped.low, 1 / w.high, 'and its interval');
});

t.test('the bootstrap is seeded, brackets its estimate and is exact on constant samples', async (t) => {
  const a = [1.43, 1.34, 1.41, 1.45, 1.62, 1.28];
  const b = [1.5, 1.4, 1.54, 1.51, 1.47];
  const one = bootstrapRatio(a, b, { seed: 7 });
  t.same(bootstrapRatio(a, b, { seed: 7 }), one, 'same seed, same interval');
  t.ok(one.low < one.estimate && one.estimate < one.high);
  // A percentile bootstrap is narrower than Welch's t on 5 and 6 runs, and within its range here.
  const w = welchRatio(a, b);
  t.ok(one.low > w.low && one.high < w.high, `${one.low}–${one.high} inside ${w.low}–${w.high}`);
  t.same(bootstrapRatio([1.2, 1.2, 1.2], [1.5, 1.5]), { estimate: 1.25, low: 1.25, high: 1.25 });
});

t.test('the SD needs two values', async (t) => {
  t.ok(Number.isNaN(sd([1.4])));
  t.ok(Math.abs(sd([1, 2, 3, 4]) - Math.sqrt(5 / 3)) < 1e-12);
});

t.test('verdict against the bound', async (t) => {
  t.equal(verdict({ estimate: 1, low: 0.97, high: 1.05 }), 'met', 'upper end at the bound');
  t.equal(verdict({ estimate: 1.2, low: 1.051, high: 1.3 }), 'missed', 'lower end above the bound');
  t.equal(verdict({ estimate: 1.05, low: 1.0, high: 1.1 }), 'not resolved');
});

t.test("bench.ts's table rows are read per N, and a relay that fell behind is flagged", async (t) => {
  const out = [
    'Medians of 1 rounds; 6 s measured per run after 2 s warm-up; …',
    '',
    '| N | frames/s relay / baseline | CPU µs per frame relay / baseline (ratio) | p50 direct | p50 added relay / baseline | p99 direct | p99 added relay / baseline | frames lost relay / baseline |',
    '|---|---|---|---|---|---|---|---|',
    '| 50 | 2478 / 2477 (1.00) | 62.6 / 45.1 (1.39) | 0.41 ms | +-0.03 / +-0.02 ms (-0.01 more) | 12.62 ms | +-6.08 / +-4.91 ms (-1.17 more) | 0 / 0 |',
    '| 100 | 4650 / 4938 (0.94) | 124.8 / 69.6 (1.79) | 0.40 ms | +0.05 / +0.03 ms (0.02 more) | 5.88 ms | +-0.15 / +0.08 ms (-0.23 more) | 3 / 0 |',
  ].join('\n');
  const rows = parseBenchOutput(out);
  t.equal(rows.length, 2);
  t.match(rows[0], { n: 50, cpuRelay: 62.6, cpuBare: 45.1, fpsRelay: 2478, fpsBare: 2477, lostRelay: 0, lostBare: 0 });
  t.ok(Math.abs(rows[0]!.ratio - 62.6 / 45.1) < 1e-12);
  t.notOk(fellBehind(rows[0]!));
  t.match(rows[1], { n: 100, lostRelay: 3 });
  t.ok(fellBehind(rows[1]!));
  t.ok(fellBehind({ ...rows[0]!, fpsRatio: 0.97 }), 'frames/s under 0.98 × bare');
});

// ---- paired runs (bench.ts --compare); reference values from NumPy 2 and SciPy 1.17 (scipy.stats.t.interval) ----

const near = (t: Test, got: number, want: number, msg: string) => t.ok(Math.abs(got - want) < 1e-9, `${msg}: ${got} ≈ ${want}`);

t.test('a geometric mean with its one-sample t interval matches SciPy', async (t) => {
  const m = expMeanInterval([1.02, 0.98, 1.05, 1.01, 0.99].map(Math.log));
  near(t, m.estimate, 1.0097048049732202, 'estimate');
  near(t, m.low, 0.9764246009807924, 'lower end');
  near(t, m.high, 1.0441193228457621, 'upper end');
  near(t, m.sd, 0.02699261721519983, 'SD of the logs');
  t.equal(m.df, 4);
  t.ok(Number.isNaN(expMeanInterval([0.1]).low), 'one value: no interval');
});

t.test('the window order is palindromic per pair of rounds: every side has the same mean position', async (t) => {
  t.same(roundOrder(0), ['bare', 'this', 'other']);
  t.same(roundOrder(1), ['other', 'this', 'bare']);
  t.same(roundOrder(2), ['bare', 'other', 'this']);
  t.same(roundOrder(3), ['this', 'other', 'bare']);
  for (const rounds of [2, 4, 8]) {
    const position = { bare: 0, this: 0, other: 0 };
    for (let r = 0; r < rounds; r++) roundOrder(r).forEach((side, i) => (position[side] += i));
    t.same(position, { bare: rounds, this: rounds, other: rounds }, `${rounds} rounds`);
  }
});

/** Windows of one run from (bare, this, other) CPU per frame per round, in each round's order. */
const windowsOf = (n: number, rounds: [number, number, number][]): PairedWindow[] =>
  rounds.flatMap(([bare, mine, other], round) =>
    roundOrder(round).map((side) => ({ n, round, side, cpu: { bare, this: mine, other }[side], fps: 2500, lost: 0 })),
  );
const recordOf = (windows: PairedWindow[]): PairedRecord => ({
  kind: 'paired',
  thisTree: { dir: '/b', commit: 'b' },
  otherTree: { dir: '/a', commit: 'a' },
  procedure: 'p',
  startedAt: '',
  endedAt: '',
  loadStart: 1,
  loadEnd: 1,
  windows,
});

t.test('per-round log ratios pair the windows of a round and skip incomplete rounds and other Ns', async (t) => {
  const w = [
    ...windowsOf(50, [
      [40, 52, 50],
      [42, 55, 52.5],
    ]),
    ...windowsOf(100, [[30, 45, 44]]),
  ];
  const r = roundLogRatios(w.slice(0, -1).concat(w.slice(3, 5).map((x) => ({ ...x, round: 7 }))), 50);
  near(t, r.thisOther[0]!, Math.log(52 / 50), 'round 1 this ÷ other');
  near(t, r.thisBare[1]!, Math.log(55 / 42), 'round 2 this ÷ bare');
  near(t, r.otherBare[1]!, Math.log(52.5 / 42), 'round 2 other ÷ bare');
  t.equal(r.thisOther.length, 2, 'round 7 has two windows only');
});

t.test('pooled over runs, the run is the unit: t over run means, SDs per window and per run, match NumPy/SciPy', async (t) => {
  const runs: [number, number, number][][] = [
    [
      [40, 52, 50],
      [42, 55, 52.5],
      [39, 50, 49],
      [41, 54, 51],
    ],
    [
      [45, 57, 56],
      [44, 58, 55],
    ],
    [
      [38, 49, 48.2],
      [40, 51.5, 50],
      [39, 50, 50.5],
    ],
  ];
  const s = pairedSummary(
    runs.map((r) => recordOf(windowsOf(50, r))),
    50,
  );
  t.equal(s.runs.length, 3);
  t.equal(s.pooled.withinRun, false);
  t.equal(s.pooled.df, 2);
  near(t, s.pooled.estimate, 1.0298376183488307, 'B ÷ A over runs');
  near(t, s.pooled.low, 0.9914617966241176, 'lower end (t, df 2)');
  near(t, s.pooled.high, 1.069698826296252, 'upper end');
  near(t, s.sdPerRun, 0.01528739739268722, 'SD of the run means');
  near(t, s.sdPerWindow, 0.01899135442784158, 'pooled within-run SD per round');
  near(t, s.thisBare, 1.2935174562470684, 'B ÷ bare');
  near(t, s.otherBare, 1.2560402078931663, 'A ÷ bare');
  near(t, s.runs[0]!.thisOther.low, 1.0161325823759948, 'run 1 within-run lower end');
  near(t, s.runs[0]!.thisOther.high, 1.0677430160048325, 'run 1 within-run upper end');
  const one = pairedSummary([recordOf(windowsOf(50, runs[0]!))], 50);
  t.equal(one.pooled.withinRun, true, 'one run: the within-run interval, marked so');
  near(t, one.pooled.high, 1.0677430160048325, 'one run: its own interval');
});
