import type { UsageCheckpoint } from '@s2s/contract';

/** Msg-Id of a checkpoint: a republished checkpoint (a retry) is a duplicate JetStream drops. */
export function usageCheckpointMsgId(c: Pick<UsageCheckpoint, 'attachment_id' | 'seq'>): string {
  return `${c.attachment_id}:${c.seq}`;
}

/** Total order of one session's attachments; JS string order matches COLLATE "C" for ASCII ids. */
export function isNewerAttachment(a: { startedAtMs: number; id: string }, b: { startedAtMs: number; id: string }): boolean {
  return a.startedAtMs !== b.startedAtMs ? a.startedAtMs > b.startedAtMs : a.id > b.id;
}
