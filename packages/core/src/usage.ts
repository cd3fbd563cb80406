import type { CheckpointRoute, ProviderUsage, UsageCheckpoint } from '@s2s/contract';
import { USAGE_COUNTERS, ZERO_USAGE, type Usage } from './money.js';

/** Msg-Id of a checkpoint: a republished checkpoint (a retry) is a duplicate JetStream drops. */
export function usageCheckpointMsgId(c: Pick<UsageCheckpoint, 'attachment_id' | 'seq'>): string {
  return `${c.attachment_id}:${c.seq}`;
}

/** Total order of one session's attachments; JS string order matches COLLATE "C" for ASCII ids. */
export function isNewerAttachment(a: { startedAtMs: number; id: string }, b: { startedAtMs: number; id: string }): boolean {
  return a.startedAtMs !== b.startedAtMs ? a.startedAtMs > b.startedAtMs : a.id > b.id;
}

/**
 * Route parts of several attachments (each attachment's in the order its routes served it, attachments in
 * the order they started) summed by `key`, each key once in the order it first served. Null when any
 * attachment's split is unknown (a checkpoint of version 1 or 2): the parts then could not add up to the
 * totals.
 */
function sumParts<T extends Usage>(
  attachments: readonly (readonly CheckpointRoute[] | null)[],
  key: (r: CheckpointRoute) => string,
  part: (r: CheckpointRoute) => T,
): T[] | null {
  const parts = new Map<string, T>();
  for (const routes of attachments) {
    if (routes === null) return null;
    for (const r of routes) {
      const k = key(r);
      let sum = parts.get(k);
      if (!sum) parts.set(k, (sum = part(r)));
      for (const c of USAGE_COUNTERS) sum[c] += r[c];
    }
  }
  return [...parts.values()];
}

/** A session's usage by route (provider and provider model), as settlement stores it. */
export function usageByRoute(attachments: readonly (readonly CheckpointRoute[] | null)[]): CheckpointRoute[] | null {
  return sumParts(
    attachments,
    (r) => `${r.provider}\n${r.provider_model}`,
    (r) => ({ provider: r.provider, provider_model: r.provider_model, ...ZERO_USAGE }),
  );
}

/** The session resource's `usage.routes`: a session's usage by the provider that served it. */
export function usageByProvider(attachments: readonly (readonly CheckpointRoute[] | null)[]): ProviderUsage[] | null {
  return sumParts(
    attachments,
    (r) => r.provider,
    (r) => ({ provider: r.provider, ...ZERO_USAGE }),
  );
}
