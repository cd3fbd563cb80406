// The short cluster campaign in CI (`npm run chaos -- --cluster --quick`): a three-node NATS cluster (stream on
// three replicas), a PostgreSQL primary with a synchronous standby behind PgBouncer; the stream leader killed,
// every node restarted in turn, the primary failed over, the pooler killed. Figures in docs/chaos.md.
import { existsSync } from 'node:fs';
import t from 'tap';
import { CLUSTER_SCENARIO_NAMES, PGBOUNCER_BIN, runCampaign, table } from '@s2s/chaos';
import { judgeResults } from './judged.js';

t.setTimeout(300_000);

if (!existsSync(PGBOUNCER_BIN) && process.env.S2S_POOLER_TESTS !== 'required') {
  t.skip(`cluster campaign: no ${PGBOUNCER_BIN} (apt-get install pgbouncer; .ci/run installs it)`, () => {});
} else {
  const results = await runCampaign({
    cluster: true,
    quick: true,
    sessions: 3,
    natsDownMs: 6000,
    pgDownMs: 3000,
    scenarios: [],
    log: () => {},
  });
  t.comment(`\n${table(results)}`);
  t.same(
    results.map((r) => r.name),
    CLUSTER_SCENARIO_NAMES,
    'every cluster scenario ran',
  );
  judgeResults(t, results, { exact: true });
}
