// The chaos harness for the tap tests (tests/chaos): the private stack, the measuring client,
// the campaign and its judgement.
export { CLUSTER_SCENARIO_NAMES, runCampaign, SCENARIO_NAMES, type CampaignOptions } from './campaign.js';
export { CHUNK_MS, ChaosSession, HttpTally, operatorKey, call, type Api, type SessionView } from './client.js';
export {
  freePort,
  killAll,
  Nats,
  NatsCluster,
  PgBouncer,
  PGBOUNCER_BIN,
  pgUser,
  Postgres,
  setPortRange,
  sleep,
  TempDir,
  waitFor,
} from './infra.js';
export { judge, lostIn, lostOut, summarize, table, details, type ScenarioResult, type SessionResult, type Summary } from './report.js';
export { heal, SCENARIOS } from './scenarios.js';
export { ADMIN_TOKEN, Stack, Service, type StackOptions } from './stack.js';
export { tcpQueues, unreadByPeer } from './tcp.js';
export { checkInvariants, faultFixture, notSettledOnce, turn, type FaultFixture } from './fixture.js';
