import type { Bus } from '@s2s/bus';
import { CloseCode, type EndCause } from '@s2s/contract';
import { BYTES_PER_MS, newId, toVoiceSession, ZERO_USAGE, type SessionRecord, type Usage } from '@s2s/core';
import { activateSession, requestEnd } from '@s2s/sessions';
import type { DbHandle } from '@s2s/db';
import type { Logger } from '@s2s/telemetry';
import { WebSocket, type RawData } from 'ws';
import type { Checkpointer, Metered } from './checkpoints.js';
import type { Config } from './config.js';
import { AUDIO_FRAME_MESSAGES, decodePcmFrame } from './domain/audio.js';
import { Budget } from './domain/budget.js';
import {
  eventIdOf,
  isAppendShape,
  isRejection,
  parseControlEvent,
  serverEvents,
  type ControlEvent,
  type EventIds,
  type Rejection,
} from './domain/events.js';
import type { MeteredUpstream, UpstreamEvent } from './providers/types.js';
import type { UpstreamOpener } from './upstream.js';

/** Why an attachment ends; each maps to a close code (decisions.md, Realtime). */
export type FinishReason =
  | 'client_closed'
  | 'replaced'
  | 'end_requested'
  | 'budget_exhausted'
  | 'upstream_failure'
  | 'abuse'
  | 'auth_lost'
  | 'draining'
  | 'internal_error';

const CLOSE_FOR: Record<Exclude<FinishReason, 'client_closed'>, { code: number; reason: string }> = {
  replaced: { code: CloseCode.replaced, reason: 'replaced by a newer attachment' },
  end_requested: { code: CloseCode.sessionEnded, reason: 'session ended' },
  budget_exhausted: { code: CloseCode.sessionEnded, reason: 'budget exhausted' },
  upstream_failure: { code: CloseCode.internalError, reason: 'upstream unavailable' },
  abuse: { code: CloseCode.policyViolation, reason: 'too many rejected events' },
  auth_lost: { code: CloseCode.policyViolation, reason: 'authorization lost' },
  draining: { code: CloseCode.relayDraining, reason: 'relay draining, attach again' },
  internal_error: { code: CloseCode.internalError, reason: 'internal error' },
};

/** decisions.md: more than 100 rejected events in 10 seconds closes the socket with 1008. */
export const ABUSE_LIMIT = 100;
export const ABUSE_WINDOW_MS = 10_000;
/** How long a client may take to answer our close frame. */
const CLOSE_HANDSHAKE_MS = 2000;
/** Events held while the upstream opens; beyond this they are refused (the open is bounded anyway). */
const MAX_PENDING = 1000;

/** ws sends a Buffer as a binary frame unless told otherwise; every event is a text frame. */
const TEXT_FRAME = { binary: false } as const;

const OPENING = 0;
const OPEN = 1;
const FINISHING = 2;

/** What every attachment of one relay process shares. */
export interface AttachmentContext {
  config: Config;
  db: DbHandle;
  bus: Bus;
  logger: Logger;
  providers: UpstreamOpener;
  checkpoints: Checkpointer;
  eventIds: EventIds;
  /** Called once the attachment is fully finished (final checkpoint published, socket closed). */
  onFinished(a: Attachment): void;
}

export interface AttachmentInit {
  ws: WebSocket;
  session: SessionRecord;
  attachmentId: string;
  startedAt: Date;
  prior: Usage;
  legacy: boolean;
  requestId: string;
}

interface ResponseIds {
  upstreamId: string;
  id: string;
  quoted: string;
}

/**
 * One live client socket bound to one upstream session. The two hot paths are onMessage (client audio in)
 * and the audio_delta case of handleUpstream (model audio out): one JSON.parse or one string build, the
 * base64 step, a float budget screen and a flag for the checkpoint timer; no I/O, no timer, no allocation
 * beyond the frame itself.
 */
export class Attachment implements Metered {
  readonly sessionId: string;
  readonly attachmentId: string;
  readonly startedAtMs: number;
  readonly legacy: boolean;
  seq = 0;
  dirty = false;
  sealed = false;

  private readonly ws: WebSocket;
  private readonly session: SessionRecord;
  private readonly budget: Budget;
  private readonly log: Logger;
  private state = OPENING;
  private upstream: MeteredUpstream | null = null;
  private opening: Promise<MeteredUpstream | null> | null = null;
  private readonly openAbort = new AbortController();
  private pending: (Buffer | ControlEvent)[] = [];
  private activated: boolean;
  /** Upstream events held while the activation UPDATE runs, so no reply to input precedes `active`. */
  private gate: UpstreamEvent[] | null = null;
  private budgetHit = false;
  private rejects: number[] = [];
  private responses: ResponseIds[] = [];
  private current: ResponseIds | null = null;
  private playedBytes = 0;
  /** A response is under way or about to be (speech stopped, commit, response.create). */
  private responseExpected = false;
  private responseWaiter: (() => void) | null = null;
  private finishing: Promise<void> | null = null;
  private finishReason: FinishReason | null = null;

  constructor(
    private readonly ctx: AttachmentContext,
    init: AttachmentInit,
  ) {
    this.ws = init.ws;
    this.session = init.session;
    this.sessionId = init.session.id;
    this.attachmentId = init.attachmentId;
    this.startedAtMs = init.startedAt.getTime();
    this.legacy = init.legacy;
    this.activated = init.session.status !== 'ready';
    this.budget = new Budget(init.session.rate, init.session.preauthorizedCents, init.prior);
    this.log = ctx.logger.child({
      session_id: this.sessionId,
      attachment_id: this.attachmentId,
      request_id: init.requestId,
    });
  }

  get isFinishing(): boolean {
    return this.state === FINISHING;
  }

  get reason(): FinishReason | null {
    return this.finishReason;
  }

  usage(): Usage {
    return this.upstream ? this.upstream.usage() : ZERO_USAGE;
  }

  /** Sends the session events and opens the upstream; client events meanwhile wait in order. */
  start(): void {
    const { ws } = this;
    ws.on('message', this.onMessage);
    ws.on('close', () => void this.finish('client_closed'));
    // ws closes the socket itself after an error (1009 for an oversize event, 1002 for a protocol error).
    ws.on('error', (err) => this.log.debug({ err }, 'client socket error'));

    this.send(serverEvents.sessionCreated(this.ctx.eventIds.next(), toVoiceSession(this.session, this.ctx.config.realtimePublicUrl)));
    this.send(serverEvents.conversationCreated(this.ctx.eventIds.next(), newId('conv')));

    this.opening = this.ctx.providers
      .open(this.session.provider, { providerModel: this.session.providerModel }, this.onUpstreamEvent, this.openAbort.signal)
      .then(
        (up) => {
          if (this.state === FINISHING) return up; // finish() closes it
          this.upstream = up;
          this.state = OPEN;
          const queued = this.pending;
          this.pending = [];
          for (const item of queued) {
            if (this.state !== OPEN) break;
            if (Buffer.isBuffer(item)) this.forwardAudio(item);
            else this.applyControl(item);
          }
          return up;
        },
        (err: unknown) => {
          this.log.warn({ err, provider: this.session.provider }, 'upstream open failed');
          if (this.state !== FINISHING) this.failUpstream();
          return null;
        },
      );
  }

  // ---- client → upstream ----

  private readonly onMessage = (data: RawData, isBinary: boolean): void => {
    if (this.state === FINISHING) return;
    if (isBinary) return this.reject({ rejected: true, code: 'invalid_event', message: 'Events are JSON text frames.', eventId: undefined });
    let msg: unknown;
    try {
      msg = JSON.parse((data as Buffer).toString());
    } catch {
      return this.reject({ rejected: true, code: 'invalid_event', message: 'The event is not valid JSON.', eventId: undefined });
    }
    if (typeof msg === 'object' && msg !== null && (msg as { type?: unknown }).type === 'input_audio_buffer.append') {
      const ev = msg as Record<string, unknown>;
      if (!isAppendShape(ev)) {
        return this.reject({
          rejected: true,
          code: 'invalid_event',
          message: 'Invalid input_audio_buffer.append event: expected type, audio (string) and an optional event_id.',
          eventId: eventIdOf(ev),
        });
      }
      const pcm = decodePcmFrame(ev.audio);
      if (typeof pcm === 'string') {
        return this.reject({ rejected: true, code: 'invalid_audio_format', message: AUDIO_FRAME_MESSAGES[pcm], eventId: ev.event_id });
      }
      if (!this.activated) this.activate();
      if (this.state === OPEN) this.forwardAudio(pcm);
      else this.hold(pcm, ev.event_id);
      return;
    }
    const event = parseControlEvent(msg);
    if (isRejection(event)) return this.reject(event);
    if (this.state === OPEN) this.applyControl(event);
    else this.hold(event, event.event_id);
  };

  private hold(item: Buffer | ControlEvent, eventId: string | undefined): void {
    if (this.pending.length >= MAX_PENDING) {
      return this.reject({ rejected: true, code: 'invalid_event', message: 'The session is not ready for input yet.', eventId });
    }
    this.pending.push(item);
  }

  private forwardAudio(pcm: Buffer): void {
    if (this.budgetHit) return;
    const up = this.upstream as MeteredUpstream;
    const state = this.budget.check(up.usage(), Math.ceil(pcm.length / BYTES_PER_MS));
    // Input that would take the cost past the preauthorization is never forwarded (nor billed).
    if (state === 'over') return this.exhaustBudget();
    up.appendAudio(pcm);
    this.ctx.checkpoints.markDirty(this);
    if (state === 'reached') this.exhaustBudget();
  }

  private applyControl(event: ControlEvent): void {
    if (this.budgetHit) return;
    const up = this.upstream as MeteredUpstream;
    switch (event.type) {
      case 'session.update': {
        const s = event.session;
        up.updateSession({
          ...(s.voice === undefined ? {} : { voice: s.voice }),
          ...(s.turn_detection === undefined
            ? {}
            : {
                turnDetection: {
                  type: 'server_vad',
                  ...(s.turn_detection.silence_duration_ms === undefined
                    ? {}
                    : { silenceDurationMs: s.turn_detection.silence_duration_ms }),
                },
              }),
        });
        return;
      }
      case 'input_audio_buffer.commit':
        up.commit();
        this.responseExpected = true;
        return;
      case 'input_audio_buffer.clear':
        up.clear();
        return;
      case 'response.create':
        up.createResponse();
        this.responseExpected = true;
        return;
      case 'response.cancel':
        up.cancelResponse(this.current?.upstreamId ?? null, Math.floor(this.playedBytes / BYTES_PER_MS));
        return;
    }
  }

  private reject(r: Rejection): void {
    this.send(serverEvents.error(this.ctx.eventIds.next(), r.code, r.message, r.eventId));
    const now = Date.now();
    const rejects = this.rejects;
    rejects.push(now);
    while (rejects.length > 0 && (rejects[0] as number) <= now - ABUSE_WINDOW_MS) rejects.shift();
    if (rejects.length > ABUSE_LIMIT) {
      this.log.info({ rejected: rejects.length }, 'closing abusive client');
      void this.finish('abuse');
    }
  }

  /** First accepted input: ready → active in the background, holding replies until the row says so. */
  private activate(): void {
    this.activated = true;
    this.gate = [];
    activateSession({ ctx: this.ctx, input: { sessionId: this.sessionId } })
      .catch((err: unknown) => this.log.error({ err }, 'session activation failed'))
      .finally(() => {
        const held = this.gate ?? [];
        this.gate = null;
        for (const e of held) this.handleUpstream(e);
      });
  }

  // ---- upstream → client ----

  private readonly onUpstreamEvent = (e: UpstreamEvent): void => {
    if (this.gate !== null) this.gate.push(e);
    else this.handleUpstream(e);
  };

  private handleUpstream(e: UpstreamEvent): void {
    switch (e.type) {
      case 'audio_delta': {
        const r = this.responseFor(e.responseId);
        if (this.state !== FINISHING && this.ws.readyState === WebSocket.OPEN) {
          this.ws.send(serverEvents.audioDelta(this.ctx.eventIds.next(), r.quoted, e.pcm), TEXT_FRAME);
        }
        if (r === this.current) this.playedBytes += e.pcm.length;
        this.usageChanged();
        return;
      }
      case 'speech_started':
        this.send(serverEvents.speechStarted(this.ctx.eventIds.next(), msInt(e.audioStartMs)));
        return;
      case 'speech_stopped':
        this.responseExpected = true;
        this.send(serverEvents.speechStopped(this.ctx.eventIds.next(), msInt(e.audioEndMs)));
        return;
      case 'response_created': {
        const r = this.responseFor(e.responseId);
        this.current = r;
        this.playedBytes = 0;
        this.responseExpected = true;
        this.send(serverEvents.responseCreated(this.ctx.eventIds.next(), r.id));
        return;
      }
      case 'audio_done':
        this.send(serverEvents.audioDone(this.ctx.eventIds.next(), this.responseFor(e.responseId).id));
        return;
      case 'response_done': {
        const r = this.responseFor(e.responseId);
        this.send(serverEvents.responseDone(this.ctx.eventIds.next(), r.id, e.status, e.metered ?? ZERO_USAGE));
        this.responses = this.responses.filter((x) => x !== r);
        if (this.current === r) this.current = null;
        this.responseExpected = false;
        this.usageChanged();
        this.releaseWaiter();
        return;
      }
      case 'error':
        // The provider's own text may name the provider, a model or a URL: it goes to the log only.
        this.log.warn({ fatal: e.fatal, upstream_message: e.message }, 'upstream error');
        if (e.fatal) this.failUpstream();
        else this.send(serverEvents.error(this.ctx.eventIds.next(), 'internal_error', 'The model could not process the last request.'));
        return;
      case 'closed':
        if (e.unexpected) {
          this.log.warn('upstream closed unexpectedly');
          this.failUpstream();
        }
        this.releaseWaiter();
        return;
    }
  }

  /** Our own response id for an upstream one: provider identifiers never reach the client. */
  private responseFor(upstreamId: string): ResponseIds {
    const cur = this.current;
    if (cur !== null && cur.upstreamId === upstreamId) return cur;
    for (const r of this.responses) if (r.upstreamId === upstreamId) return r;
    const id = newId('resp');
    const r: ResponseIds = { upstreamId, id, quoted: JSON.stringify(id) };
    this.responses.push(r);
    if (this.responses.length > 8) this.responses.shift();
    return r;
  }

  private usageChanged(): void {
    this.ctx.checkpoints.markDirty(this);
    if (this.budgetHit || this.upstream === null) return;
    if (this.budget.check(this.upstream.usage()) !== 'under') this.exhaustBudget();
  }

  private exhaustBudget(): void {
    if (this.budgetHit) return;
    this.budgetHit = true;
    if (this.state === FINISHING) {
      // A client gone mid-answer: stop waiting for the rest of the answer and end the session.
      this.releaseWaiter();
      void this.endSession('budget_exhausted');
      return;
    }
    this.send(serverEvents.error(this.ctx.eventIds.next(), 'budget_exhausted', 'The session reached its preauthorized amount.'));
    void this.finish('budget_exhausted');
  }

  private failUpstream(): void {
    if (this.state === FINISHING) return;
    this.send(serverEvents.error(this.ctx.eventIds.next(), 'upstream_unavailable', 'The model is unavailable; the session has ended.'));
    void this.finish('upstream_failure');
  }

  // ---- ending ----

  /**
   * Ends this attachment once (the first reason wins): stop input, end the session when the reason does,
   * let a client that left mid-answer still be billed for the answer, close the upstream, publish the final
   * checkpoint, then close the socket with the reason's code.
   */
  finish(reason: FinishReason): Promise<void> {
    if (this.finishing) return this.finishing;
    this.state = FINISHING;
    this.finishReason = reason;
    this.pending = [];
    if (this.upstream === null) this.openAbort.abort();
    this.finishing = this.runFinish(reason);
    return this.finishing;
  }

  private async runFinish(reason: FinishReason): Promise<void> {
    try {
      if (reason === 'budget_exhausted' || reason === 'upstream_failure') await this.endSession(reason);
      const up = this.upstream ?? (await this.opening);
      if (up && reason === 'client_closed' && this.responseExpected && !this.budgetHit) {
        await this.waitForResponse(this.ctx.config.responseGraceMs);
      }
      if (up) await up.close().catch((err: unknown) => this.log.warn({ err }, 'upstream close failed'));
      this.upstream = up;
      await this.ctx.checkpoints.publishFinal(this);
      // A legacy socket is its session: closing it ends the session, unless a newer attachment took over.
      if (this.legacy && reason !== 'replaced') await this.endSession('client_closed');
    } catch (err) {
      this.log.error({ err }, 'attachment finish failed');
    } finally {
      if (reason !== 'client_closed') this.close(CLOSE_FOR[reason]);
      this.log.info({ reason, seq: this.seq }, 'attachment finished');
      this.ctx.onFinished(this);
    }
  }

  private waitForResponse(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => this.releaseWaiter(), ms);
      this.responseWaiter = () => {
        clearTimeout(timer);
        resolve();
      };
    });
  }

  private releaseWaiter(): void {
    const w = this.responseWaiter;
    this.responseWaiter = null;
    w?.();
  }

  private async endSession(cause: EndCause): Promise<void> {
    for (const delay of [0, 200, 1000]) {
      if (delay > 0) await new Promise((r) => setTimeout(r, delay));
      try {
        await requestEnd({ ctx: this.ctx, input: { sessionId: this.sessionId, cause } });
        return;
      } catch (err) {
        this.log.warn({ err, cause }, 'end request failed');
      }
    }
    this.log.error({ cause }, 'end request lost; the expiry sweeper will end the session');
  }

  private close(c: { code: number; reason: string }): void {
    const ws = this.ws;
    if (ws.readyState !== WebSocket.OPEN && ws.readyState !== WebSocket.CONNECTING) return;
    ws.close(c.code, c.reason);
    // A client that never answers the close frame must not hold the socket (or a drain) for ws's 30 s.
    setTimeout(() => ws.terminate(), CLOSE_HANDSHAKE_MS).unref();
  }

  private send(text: string): void {
    if (this.ws.readyState === WebSocket.OPEN) this.ws.send(text);
  }
}

function msInt(ms: number): number {
  return Number.isFinite(ms) && ms > 0 ? Math.round(ms) : 0;
}
