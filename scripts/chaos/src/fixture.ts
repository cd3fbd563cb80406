// What the fault tests share: a private stack torn down with the test, and sessions ready to talk.
import { ChaosSession, HttpTally, operatorKey, type Api } from './client.js';
import type { LedgerViolation } from '@s2s/db/testing';
import { invariants, settlementCounts } from './report.js';
import { Stack, ADMIN_TOKEN, type StackOptions } from './stack.js';

export interface TeardownHost {
  teardown(fn: () => unknown): void;
}

export interface FaultFixture {
  stack: Stack;
  api: Api;
  tally: HttpTally;
  sessions: ChaosSession[];
}

/** A private stack (closed in teardown) and `n` sessions created and attached to relay `relay`. */
export async function faultFixture(t: TeardownHost, n: number, opts: StackOptions & { relay?: number } = {}): Promise<FaultFixture> {
  const stack = await Stack.start(opts);
  t.teardown(() => stack.close());
  const tally = new HttpTally();
  const api: Api = { baseUrl: stack.baseUrl(), tally };
  const key = await operatorKey(api, ADMIN_TOKEN, 10_000_000);
  const sessions = Array.from({ length: n }, (_, i) => new ChaosSession(`s${i}`, key.key));
  await Promise.all(sessions.map((s) => s.create(api)));
  const relayUrl = stack.relayUrl(opts.relay ?? 0);
  await Promise.all(sessions.map((s) => s.attach(relayUrl)));
  return { stack, api, tally, sessions };
}

/** One turn and the whole answer to it (ChaosSession.turn). */
export function turn(s: ChaosSession): Promise<boolean> {
  return s.turn();
}

/** The ledger invariants of the private database (read with retries across a restart). */
export function checkInvariants(stack: Stack): Promise<LedgerViolation[]> {
  return invariants(stack.pool);
}

/** Sessions that do not have exactly one settlement and one charge. */
export async function notSettledOnce(stack: Stack, sessions: ChaosSession[]): Promise<string[]> {
  const counts = await settlementCounts(
    stack.pool,
    sessions.map((s) => s.id),
  );
  return sessions
    .filter((s) => {
      const c = counts.get(s.id);
      return !c || !c.settled || c.settlements !== 1 || c.charges !== 1;
    })
    .map((s) => s.label);
}
