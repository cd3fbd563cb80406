import type { UsageCheckpoint } from '@s2s/contract';
import { ZERO_USAGE, addUsage, type Usage } from '@s2s/core';

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
  const ka = [Number(a.final), a.audio_in_ms, a.audio_out_ms, a.input_audio_tokens, a.output_audio_tokens, a.emitted_at];
  const kb = [Number(b.final), b.audio_in_ms, b.audio_out_ms, b.input_audio_tokens, b.output_audio_tokens, b.emitted_at];
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

export function usageOf(c: Usage): Usage {
  return {
    audio_in_ms: c.audio_in_ms,
    audio_out_ms: c.audio_out_ms,
    input_audio_tokens: c.input_audio_tokens,
    output_audio_tokens: c.output_audio_tokens,
  };
}

/** A session's usage: the sum of its attachments' newest counters. */
export function sessionUsage(attachments: Iterable<Usage>): Usage {
  let total = ZERO_USAGE;
  for (const a of attachments) total = addUsage(total, usageOf(a));
  return total;
}

/** Sessions named by `checkpoints`, each with the usage its attachments' newest checkpoints add up to. */
export function usageBySession(folded: Map<string, UsageCheckpoint>): Map<string, Usage> {
  const bySession = new Map<string, Usage>();
  for (const c of folded.values()) bySession.set(c.session_id, addUsage(bySession.get(c.session_id) ?? ZERO_USAGE, usageOf(c)));
  return bySession;
}
