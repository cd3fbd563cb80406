// npm run chaos [-- --sessions N] [--scenario a,b] [--quick] [--nats-down-ms MS] [--pg-down-ms MS] [--ports MIN-MAX] [--cluster [--pooler]]
import { parseArgs } from 'node:util';
import { cpus, hostname } from 'node:os';
import { CLUSTER_SCENARIO_NAMES, runCampaign, SCENARIO_NAMES } from './campaign.js';
import { killAll, setPortRange } from './infra.js';
import { details, table } from './report.js';

const { values } = parseArgs({
  options: {
    sessions: { type: 'string' },
    scenario: { type: 'string' },
    quick: { type: 'boolean', default: false },
    'nats-down-ms': { type: 'string' },
    'pg-down-ms': { type: 'string' },
    ports: { type: 'string' },
    cluster: { type: 'boolean', default: false },
    pooler: { type: 'boolean', default: false },
    help: { type: 'boolean', default: false },
  },
});

if (values.help) {
  process.stdout.write(
    `usage: npm run chaos -- [--sessions N] [--scenario ${SCENARIO_NAMES.join(',')}] [--quick] [--nats-down-ms MS] [--pg-down-ms MS] [--ports MIN-MAX]\n` +
      `       npm run chaos -- --cluster [--pooler] [--scenario ${CLUSTER_SCENARIO_NAMES.join(',')}] [--sessions N] [--quick] [--ports MIN-MAX]\n` +
      '  --cluster: a three-node NATS cluster and a PostgreSQL primary with a streaming standby (its own scenarios)\n' +
      '  --pooler: PostgreSQL behind PgBouncer in transaction mode (implied by the pooler scenario)\n' +
      '  --quick: 4 sessions per scenario and shorter outages (NATS 8 s), unless given\n' +
      '  --ports: where its NATS and PostgreSQL listen (default 17000-17999)\n',
  );
  process.exit(0);
}

function positiveInt(name: string, v: string | undefined, fallback: number): number {
  if (v === undefined) return fallback;
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1) throw new Error(`--${name} must be a positive integer`);
  return n;
}

if (values.ports !== undefined) {
  const [min, max] = values.ports.split('-').map(Number);
  setPortRange(min!, max!);
}

const quick = values.quick;
const opts = {
  quick,
  cluster: values.cluster,
  pooler: values.pooler,
  sessions: positiveInt('sessions', values.sessions, quick ? 4 : 40),
  natsDownMs: positiveInt('nats-down-ms', values['nats-down-ms'], quick ? 8000 : 45_000),
  pgDownMs: positiveInt('pg-down-ms', values['pg-down-ms'], quick ? 4000 : 6000),
  scenarios: values.scenario
    ? values.scenario
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean)
    : [],
  log: (msg: string) => process.stdout.write(`${msg}\n`),
};

// Whatever happens, no process of the campaign outlives it.
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    killAll();
    process.exit(130);
  });
}
process.once('exit', () => killAll());

const started = new Date();
try {
  const results = await runCampaign(opts);
  process.stdout.write(
    `\nchaos campaign${opts.cluster ? ' (cluster)' : ''}, ${started.toISOString()}, ${hostname()} (${cpus().length} cores), ${opts.sessions} sessions per scenario, ` +
      `NATS down ${opts.natsDownMs} ms, PostgreSQL down ${opts.pgDownMs} ms\n\n${table(results)}\n\n${results.map(details).join('\n')}\n`,
  );
} catch (err) {
  process.stderr.write(`chaos campaign failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exitCode = 1;
}
