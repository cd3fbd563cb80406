// The short chaos campaign in CI: every scenario of `npm run chaos` with a few sessions each, over a private
// NATS and PostgreSQL. The full campaign (40+ sessions per scenario) is `npm run chaos`; figures in docs/chaos.md.
import t from 'tap';
import { runCampaign, table } from '@s2s/chaos';
import { judgeResults } from './judged.js';

t.setTimeout(300_000);

const results = await runCampaign({ quick: true, sessions: 3, natsDownMs: 6000, pgDownMs: 3000, scenarios: [], log: () => {} });

t.comment(`\n${table(results)}`);
judgeResults(t, results);
