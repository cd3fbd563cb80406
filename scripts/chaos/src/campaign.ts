// Runs the chosen scenarios over one private stack and always tears it down (processes, servers, temp dir).
import { killAll } from './infra.js';
import { details, table, type ScenarioResult } from './report.js';
import { CLUSTER_SCENARIOS, heal, SCENARIOS, type ScenarioOptions } from './scenarios.js';
import { Stack } from './stack.js';

export interface CampaignOptions extends ScenarioOptions {
  /** Scenario names to run, in the catalogue's order; empty runs them all. */
  scenarios: string[];
  /** The cluster catalogue over a NATS cluster and a PostgreSQL primary with a standby. */
  cluster?: boolean;
  /** PostgreSQL behind PgBouncer (cluster only; implied when the `pooler` scenario runs). */
  pooler?: boolean;
}

export const SCENARIO_NAMES = SCENARIOS.map((s) => s.name);
export const CLUSTER_SCENARIO_NAMES = CLUSTER_SCENARIOS.map((s) => s.name);

export async function runCampaign(opts: CampaignOptions): Promise<ScenarioResult[]> {
  const catalogue = opts.cluster ? CLUSTER_SCENARIOS : SCENARIOS;
  const names = catalogue.map((s) => s.name);
  const unknown = opts.scenarios.filter((n) => !names.includes(n));
  if (unknown.length > 0) throw new Error(`unknown scenario ${unknown.join(', ')}; known: ${names.join(', ')}`);
  const chosen = catalogue.filter((s) => opts.scenarios.length === 0 || opts.scenarios.includes(s.name));
  const pooler = opts.cluster === true && (opts.pooler === true || chosen.some((s) => s.name === 'pooler'));
  opts.log(
    opts.cluster
      ? `starting a private three-node NATS cluster, a PostgreSQL primary with a standby${pooler ? ' behind PgBouncer' : ''} and the gateway processes`
      : 'starting a private NATS, PostgreSQL and the gateway processes',
  );
  const stack = await Stack.start({ cluster: opts.cluster === true, pooler });
  const results: ScenarioResult[] = [];
  try {
    opts.log(
      `stack up: NATS ${stack.nats.url}, PostgreSQL 127.0.0.1:${stack.pgsql.port}, relays ${stack.relays.map((r) => r.port).join(', ')}`,
    );
    for (const scenario of chosen) {
      opts.log(`scenario ${scenario.name}: ${opts.sessions} sessions`);
      await heal(stack);
      const result = await scenario.run(stack, opts);
      results.push(result);
      opts.log(`${table([result])}\n${details(result)}\n`);
    }
  } finally {
    await stack.close().catch(() => killAll());
  }
  return results;
}
