// The judgement every campaign test applies to its results (tests/chaos/campaign.test.ts, cluster-campaign.test.ts).
import type { Test } from 'tap';
import { lostIn, lostOut, summarize, type ScenarioResult } from '@s2s/chaos';

/** `exact`: every session billed exactly the audio sent and received (no fault of the scenario may lose usage). */
export function judgeResults(t: Test, results: ScenarioResult[], opts: { exact?: boolean } = {}): void {
  for (const r of results) {
    t.test(r.name, async (t) => {
      const s = summarize(r);
      t.equal(s.settledOnce, s.sessions, 'every session settled exactly once');
      t.same(r.violations, [], 'ledger invariants hold');
      t.equal(s.http500, 0, 'no 500 answers');
      t.same(r.crashes, [], 'no process crashed');
      // A bill never exceeds what was measured: input beyond what the client sent would be a double count.
      t.same(
        r.sessions.filter((x) => lostIn(x) < 0).map((x) => x.label),
        [],
        'no session billed for input it did not send',
      );
      if (r.name !== 'client-vanish' && r.name !== 'relay-kill') {
        // A client that left mid-answer is billed output it did not read (the answer was still produced), and a
        // killed relay's kernel may drop output it had metered and sent; anywhere else that would be a double count.
        t.same(
          r.sessions.filter((x) => lostOut(x) < 0).map((x) => x.label),
          [],
          'no session billed for output it did not receive',
        );
      }
      if (opts.exact) {
        t.same(
          r.sessions.filter((x) => lostIn(x) !== 0 || lostOut(x) !== 0).map((x) => x.label),
          [],
          'every session billed exactly the audio it sent and received: nothing lost',
        );
      }
    });
  }
}
