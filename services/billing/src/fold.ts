import type { UsageCheckpoint } from '@s2s/contract';
import { USAGE_COUNTERS } from '@s2s/core';

/**
 * The newest checkpoint of each attachment among `checkpoints` (counters are cumulative, so the highest
 * `seq` carries everything before it). Any order and any duplication give the same result.
 */
export function foldCheckpoints(checkpoints: Iterable<UsageCheckpoint>): Map<string, UsageCheckpoint> {
  const newest = new Map<string, UsageCheckpoint>();
  for (const c of checkpoints) {
    const seen = newest.get(c.attachment_id);
    if (!seen || supersedes(c, seen)) newest.set(c.attachment_id, c);
  }
  return newest;
}

/**
 * Higher seq wins. Two different payloads with one seq (a relay bug: the Msg-Id would make a true retry a
 * duplicate) are ordered by their content, so that the fold stays independent of arrival order.
 */
function supersedes(a: UsageCheckpoint, b: UsageCheckpoint): boolean {
  if (a.seq !== b.seq) return a.seq > b.seq;
  return compareContent(a, b) > 0;
}

function compareContent(a: UsageCheckpoint, b: UsageCheckpoint): number {
  const ka = [Number(a.final), ...USAGE_COUNTERS.map((k) => a[k]), a.emitted_at];
  const kb = [Number(b.final), ...USAGE_COUNTERS.map((k) => b[k]), b.emitted_at];
  for (let i = 0; i < ka.length; i++) {
    const d = (ka[i] ?? 0) - (kb[i] ?? 0);
    if (d !== 0) return d;
  }
  return a.session_id < b.session_id
    ? -1
    : a.session_id > b.session_id
      ? 1
      : a.relay_id < b.relay_id
        ? -1
        : a.relay_id > b.relay_id
          ? 1
          : 0;
}
