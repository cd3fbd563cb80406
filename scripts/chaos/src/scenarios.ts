// The fault scenarios. Each runs `sessions` live sessions through the real processes, injects its fault,
// ends every session, waits for settlement and judges the bills (report.ts).
import { existsSync, readFileSync } from 'node:fs';
import { CHUNK_MS, ChaosSession, HttpTally, operatorKey, type Api } from './client.js';
import { NatsCluster, PgBouncer, sleep, waitFor } from './infra.js';
import { judge, type ScenarioResult } from './report.js';
import { ADMIN_TOKEN, type Stack } from './stack.js';

export interface ScenarioOptions {
  sessions: number;
  quick: boolean;
  /** How long NATS stays down (the relay's old final-checkpoint retry window was about 34 s). */
  natsDownMs: number;
  /** How long PostgreSQL stays down in the first-input scenario. */
  pgDownMs: number;
  log: (msg: string) => void;
}

export interface Scenario {
  name: string;
  fault: string;
  run(stack: Stack, opts: ScenarioOptions): Promise<ScenarioResult>;
}

/** One spoken turn: this much tone, then silence long enough for the simulator's VAD to answer. */
const TONE_MS = 1000;
const SILENCE_MS = 700;
/** How long a session may take to settle once the fault is over. */
const SETTLE_TIMEOUT_MS = 120_000;

interface Run {
  api: Api;
  tally: HttpTally;
  sessions: ChaosSession[];
  startedAt: number;
  crashesBefore: number;
}

/** A key, `n` sessions created through `cpUrl`, each attached to relay `relay`. */
async function prepare(stack: Stack, n: number, opts: { relay?: number; cpBaseUrl?: string } = {}): Promise<Run> {
  const tally = new HttpTally();
  const api: Api = { baseUrl: opts.cpBaseUrl ?? stack.baseUrl(), tally };
  const key = await operatorKey(api, ADMIN_TOKEN, 100_000_000);
  const sessions = Array.from({ length: n }, (_, i) => new ChaosSession(`s${i}`, key.key));
  await inBatches(sessions, 10, (s) => s.create(api));
  const relayUrl = stack.relayUrl(opts.relay ?? 0);
  await inBatches(sessions, 10, (s) => s.attach(relayUrl));
  return { api, tally, sessions, startedAt: Date.now(), crashesBefore: stack.crashes.length };
}

async function inBatches<T>(items: T[], size: number, fn: (item: T) => Promise<void>): Promise<void> {
  for (let i = 0; i < items.length; i += size) await Promise.all(items.slice(i, i + size).map(fn));
}

/** Spreads the sessions over one turn so that faults find them in every phase (input, answer, silence). */
function stagger(i: number, n: number): number {
  return Math.round(((TONE_MS + SILENCE_MS) * i) / Math.max(1, n));
}

/** Session i talks `turns(i)` turns from a staggered start, then ends; resolves when all settled (or gave up). */
function talkAndEnd(run: Run, turns: (i: number) => number): Promise<void[]> {
  return Promise.all(
    run.sessions.map(async (s, i) => {
      await sleep(stagger(i, run.sessions.length));
      for (let t = 0; t < turns(i); t++) await s.turn();
      await s.endAndSettle(run.api, SETTLE_TIMEOUT_MS);
    }),
  );
}

function finish(
  stack: Stack,
  run: Run,
  name: string,
  fault: string,
  expectedStatus: string[],
  notes: string[] = [],
): Promise<ScenarioResult> {
  return judge({
    name,
    fault,
    pool: stack.pool,
    sessions: run.sessions,
    expectedStatus,
    tally: run.tally,
    crashes: stack.crashes.slice(run.crashesBefore),
    startedAt: run.startedAt,
    notes,
  });
}

/** Restarts whatever died on its own, so one scenario's crash does not break the next. */
export async function heal(stack: Stack): Promise<void> {
  if (!stack.nats.running) await stack.nats.start();
  if (stack.nats instanceof NatsCluster && !(await stack.streamHealthy(3, 30_000)))
    throw new Error('the stream has not 3 current replicas');
  if (stack.endpoint instanceof PgBouncer && !stack.endpoint.running) await stack.endpoint.start();
  await stack.ensureStandby();
  if (!stack.pgsql.running) await stack.pgsql.start();
  for (let i = 0; i < stack.relays.length; i++) if (!stack.relays[i]?.running) await stack.restartRelay(i);
  for (const s of [stack.provider, stack.controlPlane, stack.billing]) if (!s.running) await s.start();
}

const billingKill: Scenario = {
  name: 'billing-kill',
  fault: 'billing SIGKILLed repeatedly while sessions talk and end (restarted after each kill)',
  async run(stack, opts) {
    const run = await prepare(stack, opts.sessions);
    const kills = opts.quick ? 2 : 5;
    let done = 0;
    const talkers = run.sessions.map(async (s, i) => {
      await sleep(stagger(i, run.sessions.length));
      // Two to six turns (two or three in the short version), so the ends are spread over the kills.
      for (let t = 0; t < 2 + (i % (opts.quick ? 2 : 5)); t++) await s.turn();
      await s.endAndSettle(run.api, SETTLE_TIMEOUT_MS);
      done++;
    });
    let killed = 0;
    const killer = (async () => {
      await sleep(2000);
      for (; killed < kills && done < run.sessions.length; killed++) {
        await stack.billing.kill();
        await sleep(500 + Math.random() * 1000);
        await stack.billing.start();
        await sleep(500 + Math.random() * 1000);
      }
    })();
    await Promise.all([killer, ...talkers]);
    if (!stack.billing.running) await stack.billing.start();
    return finish(stack, run, this.name, this.fault, ['completed'], [`billing killed ${killed} times`]);
  },
};

const relayKill: Scenario = {
  name: 'relay-kill',
  fault: 'the relay holding every session SIGKILLed mid-stream; clients re-attach to another relay',
  async run(stack, opts) {
    const run = await prepare(stack, opts.sessions, { relay: 0 });
    const survivor = stack.relayUrl(1);
    let reattached = 0;
    const talkers = run.sessions.map(async (s, i) => {
      await sleep(stagger(i, run.sessions.length));
      let moved = false;
      for (let t = 0; t < 4; t++) {
        const ok = await s.turn();
        if (!ok && !moved) {
          await s.socketClosed(5000);
          moved = true;
          await s.attach(survivor);
          reattached++;
        }
      }
      await s.endAndSettle(run.api, SETTLE_TIMEOUT_MS);
    });
    // Mid-stream: every session is in its third turn, at some point of input, answer or silence.
    await sleep(2 * (TONE_MS + SILENCE_MS) + 900);
    // Frozen first, so that what its sockets still hold is known (input no relay read: not a billing loss).
    await stack.relays[0]!.kill(() => {
      if (!existsSync('/proc/net/tcp')) return;
      const table = readFileSync('/proc/net/tcp', 'utf8');
      for (const s of run.sessions) s.relayFrozen(table);
    });
    await Promise.all(talkers);
    await stack.restartRelay(0);
    return finish(stack, run, this.name, this.fault, ['completed'], [`${reattached} sessions re-attached to relay 1`]);
  },
};

const natsOutage: Scenario = {
  name: 'nats-outage',
  fault: 'NATS stopped while sessions talk; they keep talking and request their end during the outage',
  async run(stack, opts) {
    const run = await prepare(stack, opts.sessions, { relay: 0 });
    // One turn with the bus up, so each session has checkpoints folded before the outage.
    await Promise.all(
      run.sessions.map(async (s, i) => {
        await sleep(stagger(i, run.sessions.length) / 4);
        await s.turn();
      }),
    );
    await stack.nats.stop();
    const downAt = Date.now();
    opts.log(`  NATS down for ${opts.natsDownMs} ms`);
    await Promise.all(
      run.sessions.map(async (s) => {
        for (let t = 0; t < 2; t++) await s.turn();
        await s.end(run.api, 15_000);
      }),
    );
    await sleep(Math.max(0, opts.natsDownMs - (Date.now() - downAt)));
    await stack.nats.start();
    opts.log('  NATS up again');
    await Promise.all(run.sessions.map((s) => s.endAndSettle(run.api, SETTLE_TIMEOUT_MS)));
    const endAnswers = countStatuses(run.sessions.map((s) => s.endStatuses[0] ?? -1));
    return finish(
      stack,
      run,
      this.name,
      `${this.fault} (${Math.round(opts.natsDownMs / 1000)} s)`,
      ['completed'],
      [`first end answers during the outage: ${endAnswers}`],
    );
  },
};

const pgFirstInput: Scenario = {
  name: 'pg-first-input',
  fault: 'PostgreSQL stopped (immediate) after attach, before the first audio; started again mid-stream',
  async run(stack, opts) {
    const run = await prepare(stack, opts.sessions, { relay: 0 });
    await stack.pgsql.stop('immediate');
    const downAt = Date.now();
    opts.log(`  PostgreSQL down for ${opts.pgDownMs} ms`);
    const talkers = run.sessions.map(async (s, i) => {
      await sleep(stagger(i, run.sessions.length) / 4);
      for (let t = 0; t < 3; t++) await s.turn();
      await s.endAndSettle(run.api, SETTLE_TIMEOUT_MS);
    });
    await sleep(Math.max(0, opts.pgDownMs - (Date.now() - downAt)));
    await stack.pgsql.start();
    opts.log('  PostgreSQL up again');
    await Promise.all(talkers);
    return finish(stack, run, this.name, `${this.fault} (${Math.round(opts.pgDownMs / 1000)} s)`, ['completed']);
  },
};

const pgRestart: Scenario = {
  name: 'pg-restart',
  fault: 'PostgreSQL crashed (immediate) and restarted mid-stream, some ends requested while it is down',
  async run(stack, opts) {
    const run = await prepare(stack, opts.sessions, { relay: 0 });
    const talkers = talkAndEnd(run, (i) => 1 + (i % 3));
    await sleep(TONE_MS + SILENCE_MS + 1500);
    await stack.pgsql.stop('immediate');
    await sleep(3000);
    await stack.pgsql.start();
    await talkers;
    return finish(stack, run, this.name, this.fault, ['completed']);
  },
};

const clientVanish: Scenario = {
  name: 'client-vanish',
  fault: 'clients drop their connection (no close frame) at the first audio of an answer; ended later by POST …/end',
  async run(stack, opts) {
    const finished = stack.relays[0]!.records('attachment finished');
    const run = await prepare(stack, opts.sessions, { relay: 0 });
    await Promise.all(
      run.sessions.map(async (s, i) => {
        await sleep(stagger(i, run.sessions.length) / 4);
        await s.turn();
        const speaking = s.speak(TONE_MS, SILENCE_MS, () => s.vanished);
        await s.nextDelta(5000);
        s.vanish();
        await speaking;
        await sleep(Math.random() * 1500);
        await s.endAndSettle(run.api, SETTLE_TIMEOUT_MS);
      }),
    );
    await relayReadInput(run.sessions, finished);
    const uncounted = run.sessions.filter((s) => s.relayReadInMs === null).length;
    return finish(
      stack,
      run,
      this.name,
      this.fault,
      ['completed'],
      [
        'output billed beyond what a vanished client received is by design (the answer was produced and metered)',
        ...(uncounted > 0
          ? [`no frames_in logged for ${uncounted} session(s): all their input sent counts (none taken as discarded)`]
          : []),
      ],
    );
  },
};

/**
 * What the relay read of each session's input, from the `frames_in` of its attachments' finish logs (each
 * attachment logs once its final checkpoint is out, about when the session settles: waited for a little).
 */
async function relayReadInput(sessions: ChaosSession[], finished: { lines: Record<string, unknown>[]; stop(): void }): Promise<void> {
  const read = () => {
    const frames = new Map<string, { frames: number; attachments: number }>();
    for (const l of finished.lines) {
      if (typeof l.session_id !== 'string' || typeof l.frames_in !== 'number') continue;
      const f = frames.get(l.session_id) ?? { frames: 0, attachments: 0 };
      frames.set(l.session_id, { frames: f.frames + l.frames_in, attachments: f.attachments + 1 });
    }
    return frames;
  };
  await waitFor(() => sessions.every((s) => (read().get(s.id)?.attachments ?? 0) >= s.attachments), 10_000);
  finished.stop();
  const frames = read();
  for (const s of sessions) {
    const f = frames.get(s.id);
    if (f && f.attachments >= s.attachments) s.relayReadInMs = f.frames * CHUNK_MS;
  }
}

/** Idle timeout of the sessions in the end-versus-expiry race. */
const RACE_IDLE_SECONDS = 3;

const endVsExpiry: Scenario = {
  name: 'end-vs-expiry',
  fault: `POST …/end and a GET racing the idle expiry (${RACE_IDLE_SECONDS} s idle timeout, sweeper every second)`,
  async run(stack, opts) {
    const cp = await stack.controlPlaneWith('control-plane-short-idle', { SESSION_IDLE_TIMEOUT_SECONDS: String(RACE_IDLE_SECONDS) });
    const tally = new HttpTally();
    const api: Api = { baseUrl: stack.baseUrl(cp), tally };
    const key = await operatorKey(api, ADMIN_TOKEN, 100_000_000);
    const run: Run = { api, tally, sessions: [], startedAt: Date.now(), crashesBefore: stack.crashes.length };
    const n = opts.sessions;
    // Each session talks as soon as it is attached: with a short idle timeout, waiting for the others would expire it.
    await Promise.all(
      Array.from({ length: n }, async (_, i) => {
        const s = new ChaosSession(`s${i}`, key.key);
        run.sessions.push(s);
        await sleep((i * 2000) / Math.max(1, n));
        await s.create(api);
        await s.attach(stack.relayUrl(0));
        await s.turn();
        // From 1 s before to 2 s after the deadline (last audio + idle timeout, give or take a checkpoint).
        await sleep(RACE_IDLE_SECONDS * 1000 - 1000 + (3000 * i) / Math.max(1, n - 1));
        await Promise.all([s.end(api), s.get(api)]);
        await s.endAndSettle(api, SETTLE_TIMEOUT_MS);
      }),
    );
    return finish(stack, run, this.name, this.fault, ['completed', 'expired']);
  },
};

export const SCENARIOS: Scenario[] = [billingKill, relayKill, natsOutage, pgFirstInput, pgRestart, clientVanish, endVsExpiry];

// The cluster scenarios (`npm run chaos -- --cluster`): a three-node NATS cluster with the stream on three
// replicas, a PostgreSQL primary with a synchronous streaming standby, and (`pooler`) PgBouncer in front.

function clusterOf(stack: Stack): NatsCluster {
  if (!(stack.nats instanceof NatsCluster)) throw new Error('a cluster scenario needs `--cluster`');
  return stack.nats;
}

/**
 * Sessions talk (session i `turns(i)` turns) and end; `fault` runs `atMs` into it and returns its notes, or a
 * function that finishes it once every session settled (e.g. a node brought back) and returns them.
 */
async function midStream(
  stack: Stack,
  opts: ScenarioOptions,
  scenario: Pick<Scenario, 'name' | 'fault'>,
  plan: { turns: (i: number) => number; atMs: number },
  fault: () => Promise<string[] | (() => Promise<string[]>)>,
): Promise<ScenarioResult> {
  const run = await prepare(stack, opts.sessions, { relay: 0 });
  const talkers = talkAndEnd(run, plan.turns);
  await sleep(plan.atMs);
  const done = await fault();
  await talkers;
  const notes = typeof done === 'function' ? await done() : done;
  return finish(stack, run, scenario.name, scenario.fault, ['completed'], notes);
}

const natsLeaderKill: Scenario = {
  name: 'nats-leader-kill',
  fault: 'the node leading the stream SIGKILLed mid-stream (one of three); sessions talk and end on the other two',
  run(stack, opts) {
    const cluster = clusterOf(stack);
    return midStream(stack, opts, this, { turns: () => 3, atMs: TONE_MS + SILENCE_MS + 900 }, async () => {
      const { leader } = await stack.streamState();
      if (!leader) throw new Error('the stream has no leader');
      const killedAt = Date.now();
      await cluster.byName(leader).kill();
      opts.log(`  stream leader ${leader} killed`);
      await waitFor(async () => {
        const now = await stack.streamState().catch(() => undefined);
        return now?.leader !== undefined && now.leader !== leader;
      }, 30_000);
      const after = await stack.streamState().catch(() => undefined);
      const electedMs = Date.now() - killedAt;
      // Back once every session settled on the other two.
      return async () => {
        await cluster.byName(leader).start();
        const healthy = await stack.streamHealthy(3, 30_000);
        return [
          `leader ${leader} killed, ${after?.leader ?? 'none'} leads ${electedMs} ms later; ${leader} back, 3 replicas current: ${healthy}`,
        ];
      };
    });
  },
};

const natsNodeRestart: Scenario = {
  name: 'nats-node-restart',
  fault: 'every NATS node restarted in turn (SIGTERM, start again, wait for the stream to catch up) while sessions talk and end',
  run(stack, opts) {
    const cluster = clusterOf(stack);
    return midStream(stack, opts, this, { turns: () => (opts.quick ? 3 : 5), atMs: TONE_MS }, async () => {
      const notes: string[] = [];
      for (const [i, node] of cluster.nodes.entries()) {
        const before = await stack.streamState().catch(() => undefined);
        await node.stop();
        await sleep(opts.quick ? 500 : 1500);
        await node.start();
        const started = Date.now();
        const healthy = await stack.streamHealthy(3, 30_000);
        const leader = before?.leader === `n${i}` ? ' (leader)' : '';
        notes.push(`n${i}${leader} restarted, current again in ${Date.now() - started} ms${healthy ? '' : ' (not within 30 s)'}`);
      }
      return [notes.join('; ')];
    });
  },
};

const pgFailover: Scenario = {
  name: 'pg-failover',
  fault:
    'the PostgreSQL primary crashed (immediate) mid-stream, its synchronous standby promoted (pg_ctl promote) and the endpoint moved to it',
  run(stack, opts) {
    // Some end while the store is away or just back: their end requests meet the failover.
    return midStream(stack, opts, this, { turns: (i) => 1 + (i % 3), atMs: TONE_MS + SILENCE_MS + 1200 }, async () => {
      const awayMs = await stack.failover();
      opts.log(`  failed over in ${awayMs} ms`);
      const via = stack.endpoint instanceof PgBouncer ? 'PgBouncer' : 'a TCP endpoint';
      return [`store away ${awayMs} ms (crash, promotion, endpoint moved); through ${via}`];
    });
  },
};

const pooler: Scenario = {
  name: 'pooler',
  fault: 'PgBouncer (transaction mode, unnamed statements) SIGKILLed mid-stream and started again 2 s later',
  run(stack, opts) {
    const bouncer = stack.endpoint;
    if (!(bouncer instanceof PgBouncer)) throw new Error('the pooler scenario needs `--pooler`');
    return midStream(stack, opts, this, { turns: (i) => 1 + (i % 3), atMs: TONE_MS + SILENCE_MS + 1200 }, async () => {
      await bouncer.kill();
      await sleep(2000);
      await bouncer.start();
      return [];
    });
  },
};

export const CLUSTER_SCENARIOS: Scenario[] = [natsLeaderKill, natsNodeRestart, pgFailover, pooler];

function countStatuses(statuses: number[]): string {
  const m = new Map<number, number>();
  for (const s of statuses) m.set(s, (m.get(s) ?? 0) + 1);
  return [...m].map(([k, v]) => `${k === 0 ? 'no answer' : k}×${v}`).join(', ');
}
