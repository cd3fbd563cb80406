import t from 'tap';
import { bootstrapRatio, fellBehind, parseBenchOutput, sd, tCdf, tQuantile, verdict, welchRatio } from '../bench/ab-stats.js';

// Reference values from SciPy 1.17 (scipy.stats.t and ttest_ind(..., equal_var=False).confidence_interval()).
t.test('Student t quantiles and CDF match SciPy', async (t) => {
  const close = (got: number, want: number, msg: string) =>
    t.ok(Math.abs(got - want) < 1e-9 * Math.max(1, want), `${msg}: ${got} ≈ ${want}`);
  close(tQuantile(0.975, 10), 2.228138851986274, 't(0.975, 10)');
  close(tQuantile(0.975, 1), 12.706204736174694, 't(0.975, 1)');
  close(tQuantile(0.975, 4.5), 2.6589123472044034, 't(0.975, 4.5)');
  close(tQuantile(0.025, 10), -2.228138851986274, 't(0.025, 10)');
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
