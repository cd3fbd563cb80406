// The one retry helper (@s2s/core retry.ts): the backoff formula, the wait, the loop.
import t from 'tap';
import { backoffMs, retry, RETRY_JITTER, sleep } from '../src/index.js';

t.test('backoffMs: base·2^(n-1) capped, jittered ± RETRY_JITTER, exact with jitter 0', async (t) => {
  t.same(
    [1, 2, 3, 4, 10, 100].map((n) => backoffMs(n, 100, 1000, 0)),
    [100, 200, 400, 800, 1000, 1000],
  );
  t.equal(backoffMs(0, 100, 1000, 0), 100, 'attempt 0 counts as the first');
  for (let i = 0; i < 200; i++) {
    const d = backoffMs(3, 100, 5000);
    t.ok(d >= 400 * (1 - RETRY_JITTER) && d <= 400 * (1 + RETRY_JITTER), `${d} within ±${RETRY_JITTER * 100} %`);
  }
});

t.test('sleep: true after the time, false as soon as the signal aborts', async (t) => {
  t.equal(await sleep(5), true);
  const abort = new AbortController();
  const started = Date.now();
  const waiting = sleep(10_000, { signal: abort.signal });
  abort.abort();
  t.equal(await waiting, false);
  t.ok(Date.now() - started < 1000);
  t.equal(await sleep(10, { signal: abort.signal }), false, 'already aborted');
});

t.test('retry: until it resolves; stops on shouldRetry, spent attempts or an abort', async (t) => {
  const tries: number[] = [];
  const retried: number[] = [];
  const value = await retry(
    async (attempt) => {
      tries.push(attempt);
      if (attempt < 3) throw new Error(`fail ${attempt}`);
      return 'done';
    },
    { baseMs: 1, capMs: 2, onRetry: (_err, attempt) => retried.push(attempt) },
  );
  t.same([value, tries, retried], ['done', [1, 2, 3], [1, 2]]);

  let n = 0;
  await t.rejects(
    retry(async () => Promise.reject(new Error(`try ${++n}`)), { attempts: 3, baseMs: 1, capMs: 1 }),
    { message: 'try 3' },
    'the last error after the attempts',
  );
  const permanent = new Error('permanent');
  let m = 0;
  await t.rejects(
    retry(async () => (m++, Promise.reject(permanent)), { baseMs: 1, capMs: 1, shouldRetry: (err) => err !== permanent }),
    permanent,
  );
  t.equal(m, 1, 'not retried');
  const abort = new AbortController();
  setTimeout(() => abort.abort(), 20);
  await t.rejects(
    retry(async () => Promise.reject(new Error('down')), { baseMs: 5000, capMs: 5000, signal: abort.signal }),
    {
      message: 'down',
    },
  );
});
