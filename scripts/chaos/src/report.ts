// Judges a scenario: each session's bill against what its client sent and received, exactly-once settlement
// in the store, the ledger invariants, 5xx answers and crashes; and prints the table.
import { checkLedgerInvariants, type LedgerViolation } from '@s2s/db/testing';
import type pg from 'pg';
import { sleep } from './infra.js';
import type { ChaosSession, HttpTally } from './client.js';
import type { Crash } from './stack.js';

export interface SessionResult {
  label: string;
  id: string;
  status: string | null;
  expectedStatus: string[];
  settledOnce: boolean;
  sentInMs: number;
  /**
   * Of `sentInMs`, input no relay read: what a vanished client's abortive close discarded (0 without the
   * relay's count), or what was in TCP when its relay was killed. Not billable, so not "lost".
   */
  discardedInMs: number;
  receivedOutMs: number;
  billedInMs: number;
  billedOutMs: number;
  billedCents: number;
  attachments: number;
}

export interface ScenarioResult {
  name: string;
  fault: string;
  sessions: SessionResult[];
  violations: LedgerViolation[];
  http500: number;
  http503: number;
  otherHttp5xx: number;
  crashes: Crash[];
  durationMs: number;
  notes: string[];
}

/** Settlement rows of each session, read back with retries (the store may just have restarted). */
export async function settlementCounts(
  pool: pg.Pool,
  ids: string[],
): Promise<Map<string, { settlements: number; charges: number; settled: boolean }>> {
  for (let attempt = 0; ; attempt++) {
    try {
      const { rows } = await pool.query<{ id: string; settled: boolean; settlements: number; charges: number }>(
        `SELECT s.id, s.settled_at IS NOT NULL AS settled,
                (SELECT count(*)::int FROM settlements st WHERE st.session_id = s.id) AS settlements,
                (SELECT count(*)::int FROM ledger_entries l WHERE l.session_id = s.id AND l.kind = 'charge') AS charges
           FROM voice_sessions s WHERE s.id = ANY($1::text[])`,
        [ids],
      );
      return new Map(rows.map((r) => [r.id, r]));
    } catch (err) {
      if (attempt >= 30) throw err;
      await sleep(1000);
    }
  }
}

export async function invariants(pool: pg.Pool): Promise<LedgerViolation[]> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await checkLedgerInvariants(pool);
    } catch (err) {
      if (attempt >= 30) throw err;
      await sleep(1000);
    }
  }
}

export async function judge(input: {
  name: string;
  fault: string;
  pool: pg.Pool;
  sessions: ChaosSession[];
  expectedStatus: string[];
  tally: HttpTally;
  crashes: Crash[];
  startedAt: number;
  notes?: string[];
}): Promise<ScenarioResult> {
  const counts = await settlementCounts(
    input.pool,
    input.sessions.map((s) => s.id),
  );
  const sessions = input.sessions.map((s): SessionResult => {
    const c = counts.get(s.id);
    return {
      label: s.label,
      id: s.id,
      status: s.final?.status ?? null,
      expectedStatus: input.expectedStatus,
      settledOnce: s.final !== null && c !== undefined && c.settled && c.settlements === 1 && c.charges === 1,
      sentInMs: s.sentInMs,
      discardedInMs: discardedIn(s),
      receivedOutMs: Math.round(s.receivedOutMs),
      billedInMs: s.final?.usage.audio_in_ms ?? 0,
      billedOutMs: s.final?.usage.audio_out_ms ?? 0,
      billedCents: s.final?.usage.billed_cents ?? 0,
      attachments: s.attachments,
    };
  });
  return {
    name: input.name,
    fault: input.fault,
    sessions,
    violations: await invariants(input.pool),
    http500: input.tally.count((s) => s === 500),
    http503: input.tally.count((s) => s === 503),
    otherHttp5xx: input.tally.count((s) => s > 500 && s !== 503),
    crashes: [...input.crashes],
    durationMs: Date.now() - input.startedAt,
    notes: input.notes ?? [],
  };
}

/**
 * Input a client sent that no relay read: what a vanished client's abortive close discarded (from the relay's
 * `frames_in`), or what was still in TCP when its relay was frozen and killed (relay-kill, from /proc/net/tcp).
 */
function discardedIn(s: ChaosSession): number {
  if (s.vanished && s.relayReadInMs !== null) return Math.max(0, s.sentInMs - s.relayReadInMs);
  return s.unreadAtKillInMs;
}

/**
 * Audio the bill misses (positive) or adds (negative) against the client's own count, per session; input
 * discarded by a vanished client's abortive close does not count (no relay could read it).
 */
export function lostIn(s: SessionResult): number {
  return s.sentInMs - s.discardedInMs - s.billedInMs;
}
export function lostOut(s: SessionResult): number {
  return s.receivedOutMs - s.billedOutMs;
}

export interface Summary {
  sessions: number;
  settledOnce: number;
  statusOk: number;
  /** Sessions billed for less input or output than the client sent or received. */
  underBilled: number;
  lostInMeanMs: number;
  lostInMaxMs: number;
  lostOutMeanMs: number;
  lostOutMaxMs: number;
  /** Most input billed beyond what the client sent (the bill never may). */
  overInMaxMs: number;
  billedCents: number;
  violations: number;
  http500: number;
  http503: number;
  crashes: number;
}

export function summarize(r: ScenarioResult): Summary {
  const n = r.sessions.length || 1;
  const li = r.sessions.map((s) => Math.max(0, lostIn(s)));
  const lo = r.sessions.map((s) => Math.max(0, lostOut(s)));
  return {
    sessions: r.sessions.length,
    settledOnce: r.sessions.filter((s) => s.settledOnce).length,
    statusOk: r.sessions.filter((s) => s.status !== null && s.expectedStatus.includes(s.status)).length,
    underBilled: r.sessions.filter((s) => lostIn(s) > 0 || lostOut(s) > 0).length,
    lostInMeanMs: Math.round(li.reduce((a, b) => a + b, 0) / n),
    lostInMaxMs: Math.max(0, ...li),
    lostOutMeanMs: Math.round(lo.reduce((a, b) => a + b, 0) / n),
    lostOutMaxMs: Math.max(0, ...lo),
    overInMaxMs: Math.max(0, ...r.sessions.map((s) => -lostIn(s))),
    billedCents: r.sessions.reduce((a, s) => a + s.billedCents, 0),
    violations: r.violations.length,
    http500: r.http500 + r.otherHttp5xx,
    http503: r.http503,
    crashes: r.crashes.length,
  };
}

const HEADER = [
  'scenario',
  'sessions',
  'settled once',
  'status as expected',
  'under-billed sessions',
  'input lost ms/session (mean / max)',
  'output lost ms/session (mean / max)',
  'input over-billed max ms',
  'billed cents',
  'invariant violations',
  '5xx (500 / 503)',
  'crashes',
  'seconds',
];

export function row(r: ScenarioResult): string[] {
  const s = summarize(r);
  return [
    r.name,
    String(s.sessions),
    `${s.settledOnce}/${s.sessions}`,
    `${s.statusOk}/${s.sessions}`,
    String(s.underBilled),
    `${s.lostInMeanMs} / ${s.lostInMaxMs}`,
    `${s.lostOutMeanMs} / ${s.lostOutMaxMs}`,
    String(s.overInMaxMs),
    String(s.billedCents),
    String(s.violations),
    `${s.http500} / ${s.http503}`,
    String(s.crashes),
    (r.durationMs / 1000).toFixed(0),
  ];
}

export function table(results: ScenarioResult[]): string {
  const lines = [`| ${HEADER.join(' | ')} |`, `|${HEADER.map(() => '---').join('|')}|`];
  for (const r of results) lines.push(`| ${row(r).join(' | ')} |`);
  return lines.join('\n');
}

/** Details worth reading under the table: the fault, notes, wrong statuses, violations, crashes. */
export function details(r: ScenarioResult): string {
  const out = [`${r.name}: ${r.fault}`];
  for (const n of r.notes) out.push(`  note: ${n}`);
  const statuses = new Map<string, number>();
  for (const s of r.sessions) statuses.set(String(s.status), (statuses.get(String(s.status)) ?? 0) + 1);
  out.push(
    `  terminal statuses: ${[...statuses].map(([k, v]) => `${k} ${v}`).join(', ')} (expected ${r.sessions[0]?.expectedStatus.join(' or ') ?? '-'})`,
  );
  const discardedBy = r.sessions.filter((s) => s.discardedInMs > 0);
  if (discardedBy.length > 0) {
    const total = discardedBy.reduce((a, s) => a + s.discardedInMs, 0);
    const max = Math.max(...discardedBy.map((s) => s.discardedInMs));
    out.push(
      `  input sent but never read by a relay (discarded by an abortive close, or in TCP when its relay was killed), not counted as lost: ` +
        `${discardedBy.length} session(s), ${total} ms in all, at most ${max} ms in one`,
    );
  }
  const worst = [...r.sessions].sort((a, b) => lostIn(b) + lostOut(b) - (lostIn(a) + lostOut(a)))[0];
  if (worst && (lostIn(worst) > 0 || lostOut(worst) > 0)) {
    out.push(
      `  worst session ${worst.id}: sent ${worst.sentInMs} ms${worst.discardedInMs > 0 ? ` (${worst.discardedInMs} ms discarded)` : ''}, billed ${worst.billedInMs} ms in; received ${worst.receivedOutMs} ms, billed ${worst.billedOutMs} ms out; ${worst.attachments} attachment(s)`,
    );
  }
  for (const v of r.violations.slice(0, 5)) out.push(`  violation ${v.invariant} ${v.subject}: ${v.detail}`);
  for (const c of r.crashes.slice(0, 5))
    out.push(`  crash ${c.service} (code ${c.code}, signal ${c.signal}): ${c.tail.slice(-3).join(' | ')}`);
  return out.join('\n');
}
