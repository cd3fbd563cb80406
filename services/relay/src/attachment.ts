import type { Bus } from '@s2s/bus';
import type { EndCause } from '@s2s/contract';
import { newId, toVoiceSession, ZERO_USAGE, type SessionRecord, type Usage } from '@s2s/core';
import type { DbHandle } from '@s2s/db';
import { activateSession, requestEnd } from '@s2s/sessions';
import type { Logger } from '@s2s/telemetry';
import { WebSocket, type RawData } from 'ws';
import { AbuseWindow } from './abuse.js';
import { backoffMs, settledWithin, sleep } from './backoff.js';
import type { CheckpointTicket, Checkpointer, MeteredSource } from './checkpoints.js';
import type { ClientCodec, InternalClientEvent, InternalServerEvent } from './codec/model.js';
import type { Config } from './config.js';
import { Budget } from './domain/budget.js';
import { AttachmentMeter } from './meter.js';
import type { MeteredUpstream, UpstreamEvent } from './providers/types.js';
import { answerForFinish, finishReasonForError, REQUEST_ERRORS, type FinishReason } from './realtime-errors.js';
import { ResponseTracker } from './responses.js';
import type { UpstreamOpener } from './upstream.js';

export type { FinishReason } from './realtime-errors.js';

/** How long a client may take to answer our close frame. */
const CLOSE_HANDSHAKE_MS = 2000;
/** The close waits this long for the final checkpoint; past it the socket closes and publishing goes on. */
const FINAL_BEFORE_CLOSE_MS = 2000;
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
  codec: ClientCodec;
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

/**
 * One live client socket bound to one upstream session: it routes decoded client events to the upstream
 * and upstream events to the client, and runs the attachment's end. The wire format is the codec's, turn
 * state the tracker's, usage the meter's and checkpoints the checkpointer's. The hot paths (an append in,
 * an audio delta out) do one decode or encode, a budget screen and a flag; no I/O, no timer.
 */
export class Attachment implements MeteredSource {
  readonly sessionId: string;
  readonly attachmentId: string;
  readonly startedAtMs: number;
  readonly legacy: boolean;

  private readonly ws: WebSocket;
  private readonly session: SessionRecord;
  private readonly log: Logger;
  private readonly ticket: CheckpointTicket;
  private readonly meter: AttachmentMeter;
  private readonly tracker = new ResponseTracker(() => newId('resp'));
  private readonly abuse = new AbuseWindow();
  private state = OPENING;
  private upstream: MeteredUpstream | null = null;
  private opening: Promise<MeteredUpstream | null> | null = null;
  private readonly openAbort = new AbortController();
  private pending: InternalClientEvent[] = [];
  private activated: boolean;
  /** Upstream events held while the activation UPDATE runs, so no reply to input precedes `active`. */
  private gate: UpstreamEvent[] | null = null;
  private responseWaiter: (() => void) | null = null;
  private finishing: Promise<void> | null = null;
  private finishReason: FinishReason | null = null;
  private finished = false;

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
    this.ticket = ctx.checkpoints.track(this);
    this.meter = new AttachmentMeter(
      new Budget(init.session.rate, init.session.preauthorizedCents, init.prior),
      ctx.checkpoints,
      this.ticket,
    );
    this.log = ctx.logger.child({ session_id: this.sessionId, attachment_id: this.attachmentId, request_id: init.requestId });
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
    // ws closes the socket itself after an error (1007 bad UTF-8, 1009 oversize event, 1002 protocol error).
    ws.on('error', (err) => this.log.debug({ err }, 'client socket error'));
    this.send({ type: 'session.created', session: toVoiceSession(this.session, this.ctx.config.realtimePublicUrl) });
    this.send({ type: 'conversation.created', conversationId: newId('conv') });

    this.opening = this.ctx.providers
      .open(this.session.provider, { providerModel: this.session.providerModel }, this.onUpstreamEvent, this.openAbort.signal)
      .then(
        (up) => {
          if (this.state === FINISHING) return up; // finish() closes it
          this.upstream = up;
          this.state = OPEN;
          const queued = this.pending;
          this.pending = [];
          for (const e of queued) if (this.state === OPEN) this.apply(e);
          return up;
        },
        (err: unknown) => {
          this.log.warn({ err, provider: this.session.provider }, 'upstream open failed');
          if (this.state !== FINISHING) this.fail('upstream_failure');
          return null;
        },
      );
  }

  // ---- client → upstream ----

  private readonly onMessage = (data: RawData, isBinary: boolean): void => {
    if (this.state === FINISHING) return;
    try {
      const e = this.ctx.codec.decode(data as Buffer, isBinary);
      if (e.type === 'refusal') return this.refuse(e.code, e.message, e.eventId);
      if (e.type === 'audio.append' && !this.activated) this.activate();
      if (this.state === OPEN) return this.apply(e);
      if (this.pending.length >= MAX_PENDING) return this.refuse(REQUEST_ERRORS.notReady.code, REQUEST_ERRORS.notReady.message, e.eventId);
      this.pending.push(e);
    } catch (err) {
      this.crash(err);
    }
  };

  private apply(e: InternalClientEvent): void {
    if (this.meter.exhausted) return;
    const up = this.upstream as MeteredUpstream;
    switch (e.type) {
      case 'audio.append': {
        // Input that would take the cost past the preauthorization is never forwarded (nor billed).
        const state = this.meter.admitInput(up.usage(), e.pcm.length);
        if (state === 'over') return this.exhaustBudget();
        if (state === 'exhausted') return;
        up.appendAudio(e.pcm);
        this.tracker.appended(e.pcm.length);
        if (state === 'reached') this.exhaustBudget();
        return;
      }
      case 'session.update':
        return up.updateSession(e.update);
      case 'input.commit':
        // An empty buffer is answered here: no upstream round trip, no response expected.
        if (!this.tracker.commit()) return this.refuse(REQUEST_ERRORS.commitEmpty.code, REQUEST_ERRORS.commitEmpty.message, e.eventId);
        return up.commit();
      case 'input.clear':
        this.tracker.cleared();
        return up.clear();
      case 'response.create':
        this.tracker.createRequested();
        return up.createResponse();
      case 'response.cancel': {
        const target = this.tracker.cancel();
        if (target === null) return this.refuse(REQUEST_ERRORS.cancelNotActive.code, REQUEST_ERRORS.cancelNotActive.message, e.eventId);
        return up.cancelResponse(target.upstreamId, target.playedMs);
      }
    }
  }

  /** An error event for one client event; the socket stays open unless the client keeps doing it. */
  private refuse(code: Extract<InternalServerEvent, { type: 'error' }>['code'], message: string, clientEventId: string | undefined): void {
    this.send({ type: 'error', code, message, clientEventId });
    if (this.abuse.record(Date.now())) {
      this.log.info('closing abusive client');
      void this.finish('abuse');
    }
  }

  /** First accepted input: ready → active in the background, holding replies until the row says so. */
  private activate(): void {
    this.activated = true;
    this.gate = [];
    void this.storeActivation();
  }

  /** Retried with backoff while the attachment lives: input was accepted, so the session is active. */
  private async storeActivation(): Promise<void> {
    for (let attempt = 0; !this.finished; attempt++) {
      if (attempt > 0) await sleep(backoffMs(attempt, 100, 5000), { unref: true });
      try {
        await activateSession({ ctx: this.ctx, input: { sessionId: this.sessionId } });
        if (attempt > 0) this.log.info({ attempts: attempt + 1 }, 'session activation stored after retries');
        return this.openGate();
      } catch (err) {
        this.log.warn({ err, attempt }, 'session activation failed; retrying');
        // Replies are not held through a store outage; the activation itself keeps being retried.
        this.openGate();
      }
    }
    this.log.error('session activation not stored before the attachment ended');
  }

  private openGate(): void {
    const held = this.gate;
    this.gate = null;
    if (held) for (const e of held) this.handleUpstream(e);
  }

  // ---- upstream → client ----

  private readonly onUpstreamEvent = (e: UpstreamEvent): void => {
    try {
      if (this.gate !== null) this.gate.push(e);
      else this.handleUpstream(e);
    } catch (err) {
      this.crash(err);
    }
  };

  private handleUpstream(e: UpstreamEvent): void {
    const t = this.tracker;
    switch (e.type) {
      case 'audio_delta': {
        const r = t.delta(e.responseId, e.pcm.length);
        if (this.state !== FINISHING && this.ws.readyState === WebSocket.OPEN) {
          this.ws.send(this.ctx.codec.encode({ type: 'response.audio.delta', responseId: r.id, pcm: e.pcm }), TEXT_FRAME);
        }
        return this.usageChanged();
      }
      case 'speech_started':
        return this.send({ type: 'speech.started', audioStartMs: e.audioStartMs });
      case 'speech_stopped':
        t.speechStopped();
        return this.send({ type: 'speech.stopped', audioEndMs: e.audioEndMs });
      case 'response_created':
        return this.send({ type: 'response.created', responseId: t.created(e.responseId).id });
      case 'audio_done':
        return this.send({ type: 'response.audio.done', responseId: t.resolve(e.responseId).id });
      case 'response_done':
        this.send({ type: 'response.done', responseId: t.done(e.responseId).id, status: e.status, usage: e.metered ?? ZERO_USAGE });
        this.usageChanged();
        return this.releaseWaiter();
      case 'error':
        // The provider's own text may name the provider, a model or a URL: it goes to the log only.
        this.log.warn({ fatal: e.fatal, upstream_message: e.message }, 'upstream error');
        if (e.fatal) return this.fail('upstream_failure');
        t.requestFailed();
        this.send({ type: 'error', ...REQUEST_ERRORS.upstreamRefused });
        if (!t.expectingResponse) this.releaseWaiter();
        return;
      case 'closed':
        if (e.unexpected) {
          this.log.warn('upstream closed unexpectedly');
          this.fail('upstream_failure');
        }
        return this.releaseWaiter();
    }
  }

  private usageChanged(): void {
    if (this.meter.changed(this.upstream?.usage() ?? null)) this.exhaustBudget();
  }

  private exhaustBudget(): void {
    if (this.state === FINISHING) {
      // A client gone mid-answer: stop waiting for the rest of the answer and end the session.
      this.releaseWaiter();
      void this.endSession('budget_exhausted');
      return;
    }
    this.fail('budget_exhausted');
  }

  /** Ends the attachment with the reason's error event (if it has one) and close code. */
  private fail(reason: FinishReason): void {
    if (this.state === FINISHING) return;
    const event = answerForFinish(reason).event;
    if (event) this.send({ type: 'error', ...event });
    void this.finish(reason);
  }

  /** A bug or an unexpected failure while serving the socket: the detail goes to the log only. */
  private crash(err: unknown): void {
    this.log.error({ err }, 'attachment failed');
    this.fail(finishReasonForError(err));
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
    let final: Promise<void> | null = null;
    try {
      if (reason === 'budget_exhausted' || reason === 'upstream_failure') await this.endSession(reason);
      const up = this.upstream ?? (await this.opening);
      if (up && reason === 'client_closed' && this.tracker.expectingResponse && !this.meter.exhausted) {
        await this.waitForResponse(this.ctx.config.responseGraceMs);
      }
      if (up) await up.close().catch((err: unknown) => this.log.warn({ err }, 'upstream close failed'));
      this.upstream = up;
      // Retried until the bus takes it; the client is not kept waiting for a bus outage.
      final = this.ctx.checkpoints.publishFinal(this.ticket);
      await settledWithin(final, FINAL_BEFORE_CLOSE_MS);
    } catch (err) {
      this.log.error({ err }, 'attachment finish failed');
    }
    const close = answerForFinish(reason).close;
    if (close) this.close(close);
    try {
      if (final) await final;
      // A legacy socket is its session: closing it ends the session, unless a newer attachment took over.
      if (this.legacy && reason !== 'replaced') await this.endSession('client_closed');
    } finally {
      this.finished = true;
      this.log.info({ reason, seq: this.ticket.seq }, 'attachment finished');
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
      if (delay > 0) await sleep(delay);
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

  private send(e: InternalServerEvent): void {
    if (this.ws.readyState === WebSocket.OPEN) this.ws.send(this.ctx.codec.encode(e), TEXT_FRAME);
  }
}
