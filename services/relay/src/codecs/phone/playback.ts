import { G711_BYTES_PER_MS } from '@s2s/audio';

/** One assistant audio item as far as it was sent to the telephony provider. */
interface Sent {
  responseId: string;
  itemId: string;
  contentIndex: number;
  bytes: number;
  firstSentAt: number;
}

/** Where to cut the conversation at barge-in: the item the caller was hearing and how much of it. */
export interface Cut {
  itemId: string;
  contentIndex: number;
  audioEndMs: number;
}

/**
 * What the caller has heard (decisions.md, "Phone calls"): audio sent to the provider is queued there and
 * played in real time; a mark named after a response comes back once everything before it has played. At
 * barge-in, the item being played was heard up to the audio before the last echoed mark plus what was sent
 * after it, at most the time since it began to play. Pure: the clock is passed in.
 */
export class Playback {
  /** Items sent and not yet known to be played, oldest first. */
  private queue: Sent[] = [];
  /** Responses whose mark was sent and not yet echoed. */
  private readonly marked = new Set<string>();
  /** Responses cut at barge-in: their remaining audio is not sent. */
  private readonly cleared = new Set<string>();
  /** When the provider last reported its queue played (the last echoed mark). */
  private drainedAt = Number.NEGATIVE_INFINITY;

  isCleared(responseId: string): boolean {
    return this.cleared.has(responseId);
  }

  /** `bytes` of μ-law of this item went to the provider. */
  sent(place: { responseId: string; itemId: string; contentIndex: number }, bytes: number, now: number): void {
    const last = this.queue.at(-1);
    if (last && last.itemId === place.itemId && last.responseId === place.responseId) {
      last.bytes += bytes;
      return;
    }
    this.queue.push({ ...place, bytes, firstSentAt: now });
  }

  hasSent(responseId: string): boolean {
    return this.queue.some((s) => s.responseId === responseId);
  }

  markSent(responseId: string): void {
    this.marked.add(responseId);
  }

  /** The provider echoed a mark: everything sent up to that response has played. */
  markEchoed(name: string, now: number): void {
    if (!this.marked.delete(name)) return;
    const i = this.queue.findLastIndex((s) => s.responseId === name);
    if (i === -1) return;
    this.queue = this.queue.slice(i + 1);
    this.drainedAt = now;
    this.cleared.delete(name);
  }

  /**
   * The caller started speaking: null when nothing is queued at the provider (nothing to clear), else where
   * to truncate the item being played. Everything queued is dropped.
   */
  bargeIn(now: number): Cut | null {
    const playing = this.queue[0];
    if (!playing) return null;
    const sentMs = playing.bytes / G711_BYTES_PER_MS;
    const startedAt = Math.max(playing.firstSentAt, this.drainedAt);
    const heard = Math.max(0, Math.min(sentMs, now - startedAt));
    if (heard >= sentMs && this.queue.length === 1 && !this.marked.has(playing.responseId)) {
      // All of it has played by the clock, and the response may still be producing: nothing queued to clear.
      return null;
    }
    for (const s of this.queue) this.cleared.add(s.responseId);
    this.queue = [];
    this.marked.clear();
    return { itemId: playing.itemId, contentIndex: playing.contentIndex, audioEndMs: Math.floor(heard) };
  }
}
