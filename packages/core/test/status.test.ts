import t from 'tap';
import { causeForEndReason, expiresAt, expiryCause, isTerminal, terminalStatusFor } from '../src/status.js';

t.test('terminal status by cause, the table of decisions.md', async (t) => {
  t.equal(terminalStatusFor(causeForEndReason(undefined), 'active'), 'completed');
  t.equal(terminalStatusFor(causeForEndReason('client_closed'), 'active'), 'completed');
  t.equal(terminalStatusFor(causeForEndReason(undefined), 'ready'), 'cancelled');
  t.equal(terminalStatusFor(causeForEndReason('client_closed'), 'ready'), 'cancelled');
  t.equal(terminalStatusFor(causeForEndReason('timeout'), 'active'), 'expired');
  t.equal(terminalStatusFor(causeForEndReason('timeout'), 'ready'), 'expired');
  t.equal(terminalStatusFor(causeForEndReason('error'), 'active'), 'failed');
  t.equal(terminalStatusFor('idle_timeout', 'ready'), 'expired');
  t.equal(terminalStatusFor('max_duration', 'active'), 'expired');
  t.equal(terminalStatusFor('upstream_failure', 'active'), 'failed');
  t.equal(terminalStatusFor('relay_lost', 'active'), 'failed');
  t.equal(terminalStatusFor('relay_lost', 'ready'), 'failed');
  t.equal(terminalStatusFor('budget_exhausted', 'active'), 'completed');
});

t.test('terminal statuses', async (t) => {
  for (const s of ['completed', 'cancelled', 'failed', 'expired']) t.ok(isTerminal(s), s);
  for (const s of ['ready', 'active', 'bogus']) t.notOk(isTerminal(s), s);
});

t.test('expiry: idle deadline capped by the maximum length', async (t) => {
  const base = new Date('2026-01-01T00:00:00Z');
  const clock = { lastActivityAt: base, idleTimeoutSeconds: 300, maxEndsAt: new Date(base.getTime() + 3600_000) };
  t.equal(expiresAt(clock).getTime(), base.getTime() + 300_000);
  t.equal(expiryCause(clock, new Date(base.getTime() + 299_999)), null);
  t.equal(expiryCause(clock, new Date(base.getTime() + 300_000)), 'idle_timeout');
  const nearMax = { ...clock, maxEndsAt: new Date(base.getTime() + 60_000) };
  t.equal(expiresAt(nearMax).getTime(), base.getTime() + 60_000);
  t.equal(expiryCause(nearMax, new Date(base.getTime() + 60_000)), 'max_duration');
});
