// The short chaos campaign in CI: every scenario of `npm run chaos` with a few sessions each, over a private
// NATS and PostgreSQL. The full campaign (40+ sessions per scenario) is `npm run chaos`; figures in docs/chaos.md.
import t from 'tap';
import { lostIn, lostOut, runCampaign, summarize, table } from '@s2s/chaos';

t.setTimeout(300_000);

const results = await runCampaign({ quick: true, sessions: 3, natsDownMs: 6000, pgDownMs: 3000, scenarios: [], log: () => {} });

t.comment(`\n${table(results)}`);

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
  });
}
