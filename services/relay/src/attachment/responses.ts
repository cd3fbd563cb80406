import { pcmMs, ZERO_USAGE } from '@s2s/core';
import type { InternalServerEvent } from '../codecs/events.js';
import type { UpstreamEvent } from '../providers/shared/types.js';

/** One response as the client knows it: our id for the provider's. */
export interface TrackedResponse {
  readonly upstreamId: string;
  readonly id: string;
}

/** How many recent responses keep their id mapping (late deltas of a cancelled one still map). */
const REMEMBERED = 8;

/**
 * What the relay knows of the conversation's turn state, without I/O: which response is under way, how
 * much of it the client received (for barge-in), whether one is expected (a client gone mid-answer waits
 * for it), and whether the input buffer holds anything since the last commit or clear.
 */
export class ResponseTracker {
  private responses: TrackedResponse[] = [];
  private current: TrackedResponse | null = null;
  private playedBytes = 0;
  /** A response was asked for (commit, response.create, speech stopped) and has not been created yet. */
  private requested = false;
  private uncommittedBytes = 0;

  /** Provider identifiers never reach the client: each response gets an id from `newResponseId`. */
  constructor(private readonly newResponseId: () => string) {}

  /** A response is under way or about to be. */
  get expectingResponse(): boolean {
    return this.requested || this.current !== null;
  }

  appended(bytes: number): void {
    this.uncommittedBytes += bytes;
  }

  /** A commit of the input buffer; false when nothing was appended since the last commit or clear. */
  commit(): boolean {
    if (this.uncommittedBytes === 0) return false;
    this.uncommittedBytes = 0;
    this.requested = true;
    return true;
  }

  cleared(): void {
    this.uncommittedBytes = 0;
  }

  createRequested(): void {
    this.requested = true;
  }

  /** What a barge-in stops, or null when no response is under way or asked for. */
  cancel(): { upstreamId: string | null; playedMs: number } | null {
    if (!this.expectingResponse) return null;
    const cur = this.current;
    return { upstreamId: cur?.upstreamId ?? null, playedMs: cur ? pcmMs(this.playedBytes) : 0 };
  }

  /** Server VAD committed the turn: a response follows. */
  speechStopped(): void {
    this.requested = true;
  }

  created(upstreamId: string): TrackedResponse {
    const r = this.resolve(upstreamId);
    this.current = r;
    this.playedBytes = 0;
    this.requested = false;
    return r;
  }

  /** Output audio of a response; counts what the client received of the current one. */
  delta(upstreamId: string, bytes: number): TrackedResponse {
    const r = this.resolve(upstreamId);
    if (r === this.current) this.playedBytes += bytes;
    return r;
  }

  done(upstreamId: string): TrackedResponse {
    const r = this.resolve(upstreamId);
    this.responses = this.responses.filter((x) => x !== r);
    if (this.current === r) this.current = null;
    this.requested = false;
    return r;
  }

  /** The provider refused a request (a non-fatal error): no response is coming for what was asked. */
  requestFailed(): void {
    this.requested = false;
  }

  /** Our id for an upstream one, made on first sight. */
  resolve(upstreamId: string): TrackedResponse {
    const cur = this.current;
    if (cur !== null && cur.upstreamId === upstreamId) return cur;
    for (const r of this.responses) if (r.upstreamId === upstreamId) return r;
    const r: TrackedResponse = { upstreamId, id: this.newResponseId() };
    this.responses.push(r);
    if (this.responses.length > REMEMBERED) this.responses.shift();
    return r;
  }

  /** The client event of an upstream turn event, the turn state updated; null for the events it does not describe. */
  clientEventFor(e: UpstreamEvent): InternalServerEvent | null {
    switch (e.type) {
      case 'speech_started':
        return { type: 'speech.started', audioStartMs: e.audioStartMs };
      case 'speech_stopped':
        this.speechStopped();
        return { type: 'speech.stopped', audioEndMs: e.audioEndMs };
      case 'response_created':
        return { type: 'response.created', responseId: this.created(e.responseId).id };
      case 'response_done':
        return { type: 'response.done', responseId: this.done(e.responseId).id, status: e.status, usage: e.metered ?? ZERO_USAGE };
      default:
        return null;
    }
  }
}
