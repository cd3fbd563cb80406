import type { ItemBody } from '../../agent/types.js';
import type { HistoryEntry, ReplayContext, UpstreamEvent } from './types.js';

/**
 * Continuity of a session across upstream connections (docs/providers.md, "Continuity"): the policy, the
 * conversation as a new connection's history, and the renaming of keys and response ids between the
 * relay (which keeps the names it saw first) and each new connection (which has its own).
 */
export interface ContinuityPolicy {
  /** Longest connection the provider allows (OpenAI: 60 minutes); 0: only announcements and losses move a session. */
  maxConnectionMs: number;
  /** A move is planned this long before the cap (or at the provider's announcement) and made at the first quiet moment. */
  marginMs: number;
  /** Connection attempts per move, each bounded by the connect timeout, with backoff between them. */
  attempts: number;
  /** Backoff before attempt n+1: backoffMs · 2ⁿ⁻¹ (jittered). */
  backoffMs: number;
  /** Input held while a move is under way; beyond it input is dropped (never forwarded, never billed). */
  maxHeldBytes: number;
  /** Input since the last commit, kept to be sent again to the next connection (the turn under way). */
  maxUncommittedBytes: number;
  /**
   * The same while the provider detects turns and none is under way (no speech since the last commit):
   * only the recent tail a new connection needs to hear a turn's start (its prefix padding), so an open
   * microphone in silence does not hold 30 s of audio per session.
   */
  idleUncommittedBytes: number;
}

/** 30 s of 24 kHz PCM16. */
const THIRTY_SECONDS = 30 * 48_000;

export const DEFAULT_CONTINUITY: Readonly<ContinuityPolicy> = Object.freeze({
  maxConnectionMs: 60 * 60_000,
  marginMs: 60_000,
  attempts: 3,
  backoffMs: 100,
  maxHeldBytes: THIRTY_SECONDS,
  maxUncommittedBytes: THIRTY_SECONDS,
  idleUncommittedBytes: 2 * 48_000,
});

/** A move with an answer still under way is forced this long before the deadline. */
export const FORCE_BEFORE_DEADLINE_MS = 1000;

/**
 * The conversation as the history of a new connection: every item under its gateway id (a provider-made
 * item's old key meant nothing to the new connection), and which relay key each id stands for.
 */
export function historyOf(context: ReplayContext): { history: HistoryEntry[]; keys: [relayKey: string, upstreamKey: string][] } {
  const history: HistoryEntry[] = [];
  const keys: [string, string][] = [];
  for (const { key, item } of context.items) {
    const { id, ...body } = item;
    history.push({ key: id, item: body as ItemBody });
    keys.push([key, id]);
  }
  return { history, keys };
}

/**
 * Names across connections. The first connection's names pass unchanged (the hot path copies nothing);
 * on later ones, a replayed item answers to its relay key, a new provider name gets a `~<n>` suffix (a
 * simulator's counters restart at `item_1`, `resp_1`), and the relay's names go back out translated.
 */
export class KeyMap {
  private connection = 1;
  private toRelay = new Map<string, string>();
  private toUpstream = new Map<string, string>();

  get renaming(): boolean {
    return this.connection > 1;
  }

  /** A new connection, seeded with these items. */
  next(replayed: [relayKey: string, upstreamKey: string][]): void {
    this.connection++;
    this.toRelay = new Map();
    this.toUpstream = new Map();
    for (const [relayKey, upstreamKey] of replayed) this.bind(relayKey, upstreamKey);
  }

  /** A client item: the same name both ways. */
  own(key: string): void {
    if (this.renaming) this.bind(key, key);
  }

  out(key: string): string {
    return this.toUpstream.get(key) ?? key;
  }

  /** A response of an earlier connection is gone: null (the adapter then cancels whatever is under way). */
  outResponse(responseId: string): string | null {
    if (!this.renaming) return responseId;
    const suffix = `~${this.connection}`;
    return responseId.endsWith(suffix) ? responseId.slice(0, -suffix.length) : null;
  }

  /** An upstream event in the relay's names. */
  in(e: UpstreamEvent): UpstreamEvent {
    if (!this.renaming) return e;
    const out = { ...e } as Record<string, unknown>;
    if (typeof out.itemKey === 'string') out.itemKey = this.inKey(out.itemKey);
    if (typeof out.previousKey === 'string') out.previousKey = this.inKey(out.previousKey);
    if (typeof out.responseId === 'string' && out.responseId !== '') out.responseId = `${out.responseId}~${this.connection}`;
    return out as UpstreamEvent;
  }

  private inKey(key: string): string {
    const known = this.toRelay.get(key);
    if (known !== undefined) return known;
    const relayKey = `${key}~${this.connection}`;
    this.bind(relayKey, key);
    return relayKey;
  }

  private bind(relayKey: string, upstreamKey: string): void {
    this.toRelay.set(upstreamKey, relayKey);
    this.toUpstream.set(relayKey, upstreamKey);
  }
}
