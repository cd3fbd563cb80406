import { newId, toVoiceSession, ZERO_USAGE, type SessionRecord, type Usage } from '@s2s/core';
import { activateSession } from '@s2s/sessions';
import type { Logger } from '@s2s/telemetry';
import { WebSocket, type RawData } from 'ws';
import { AbuseWindow } from './abuse.js';
import { AgentSession } from './agent-session.js';
import { Activation } from './activation.js';
import { settledWithin } from './backoff.js';
import type { CheckpointTicket, MeteredSource } from './checkpoints.js';
import { closeSocket, sendText, TEXT_FRAME } from './client-socket.js';
import type { AttachmentContext, AttachmentInit, AttachmentTelemetry } from './attachment-context.js';
import type { InternalClientEvent, InternalServerEvent } from './codec/model.js';
import { Budget } from './domain/budget.js';
import { endSessionWithRetries } from './end-session.js';
import { AttachmentMeter } from './meter.js';
import type { MeteredUpstream, UpstreamEvent } from './providers/types.js';
import { answerForFinish, finishReasonForError, REQUEST_ERRORS, type FinishReason } from './realtime-errors.js';
import { ResponseWaiter } from './response-waiter.js';
import { ResponseTracker } from './responses.js';

export type { FinishReason } from './realtime-errors.js';
export type { AttachmentContext, AttachmentInit } from './attachment-context.js';

/** The close waits this long for the final checkpoint; past it the socket closes and publishing goes on. */
const FINAL_BEFORE_CLOSE_MS = 2000;
/** Events held while the upstream opens; beyond this they are refused (the open is bounded anyway). */
const MAX_PENDING = 1000;

/** No client event yet: the upstream opens at the first one, with the settings of a first session.update. */
const IDLE = 0;
const OPENING = 1;
const OPEN = 2;
const FINISHING = 3;

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
  private readonly agent: AgentSession;
  private state = IDLE;
  private upstream: MeteredUpstream | null = null;
  private opening: Promise<MeteredUpstream | null> | null = null;
  private readonly openAbort = new AbortController();
  private pending: InternalClientEvent[] = [];
  private readonly activation: Activation<UpstreamEvent>;
  private readonly waiter = new ResponseWaiter();
  private finishing: Promise<void> | null = null;
  private finished = false;
  /** Spans and metrics of this attachment; also the trace its checkpoints carry. */
  readonly trace: AttachmentTelemetry;

  constructor(
    private readonly ctx: AttachmentContext<Attachment>,
    init: AttachmentInit,
  ) {
    this.ws = init.ws;
    this.session = init.session;
    this.sessionId = init.session.id;
    this.attachmentId = init.attachmentId;
    this.startedAtMs = init.startedAt.getTime();
    this.legacy = init.legacy;
    this.trace = ctx.telemetry.attachment(init.session, init.attachmentId, init.upgrade);
    this.ticket = ctx.checkpoints.track(this);
    this.meter = new AttachmentMeter(
      new Budget(init.session.rate, init.session.preauthorizedCents, init.prior),
      ctx.checkpoints,
      this.ticket,
    );
    this.agent = new AgentSession(ctx.providers.capabilities(init.session.provider), ctx.config.agentLimits, {
      send: (e) => this.send(e),
      refuse: (code, message, clientEventId, param) => this.refuse(code, message, clientEventId, param),
      responseId: (upstreamId) => this.tracker.resolve(upstreamId).id,
    });
    this.log = ctx.logger.child({ session_id: this.sessionId, attachment_id: this.attachmentId, request_id: init.requestId });
    this.activation = new Activation<UpstreamEvent>(init.session.status !== 'ready', {
      store: () => activateSession({ ctx, input: { sessionId: this.sessionId } }),
      deliver: (e) => this.handleUpstream(e),
      alive: () => !this.finished,
      log: this.log,
    });
  }

  get isFinishing(): boolean {
    return this.state === FINISHING;
  }

  usage(): Usage {
    return this.upstream ? this.upstream.usage() : ZERO_USAGE;
  }

  /** Sends the session events; the upstream opens at the first client event (see openUpstream). */
  start(): void {
    const { ws } = this;
    ws.on('message', this.onMessage);
    ws.on('close', () => void this.finish('client_closed'));
    // ws closes the socket itself after an error (1007 bad UTF-8, 1009 oversize event, 1002 protocol error).
    ws.on('error', (err) => this.log.debug({ err }, 'client socket error'));
    this.send({ type: 'session.created', session: toVoiceSession(this.session, this.ctx.config.realtimePublicUrl) });
    this.send({ type: 'conversation.created', conversationId: newId('conv') });
  }

  /**
   * Opens the upstream with the client's settings so far (a first session.update is folded into the
   * opening configuration, so the provider never starts on other settings); events meanwhile wait in order.
   */
  private openUpstream(stagedUpdate: boolean): void {
    this.state = OPENING;
    this.opening = this.trace
      .upstreamOpen((onRetry) =>
        this.ctx.providers.open(
          this.session.provider,
          { providerModel: this.session.providerModel, ...this.agent.opening() },
          this.onUpstreamEvent,
          this.openAbort.signal,
          { onRetry },
        ),
      )
      .then(
        (up) => {
          if (this.state === FINISHING) return up; // finish() closes it
          this.upstream = up;
          this.state = OPEN;
          this.agent.opened(stagedUpdate);
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
    this.ctx.telemetry.frameIn();
    try {
      const e = this.ctx.codec.decode(data as Buffer, isBinary);
      if (e.type === 'refusal') return this.refuse(e.code, e.message, e.eventId, undefined, e.wireParam);
      if (e.type === 'audio.append') this.activation.inputAccepted();
      if (this.state === OPEN) return this.apply(e);
      if (this.state === IDLE) {
        if (e.type === 'session.update') return this.agent.stageOpening(e) ? this.openUpstream(true) : undefined;
        this.openUpstream(false);
      }
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
      case 'input.commit':
        // An empty buffer is answered here: no upstream round trip, no response expected.
        if (!this.tracker.commit()) return this.refuse(REQUEST_ERRORS.commitEmpty.code, REQUEST_ERRORS.commitEmpty.message, e.eventId);
        this.trace.turnEnded();
        return up.commit();
      case 'input.clear':
        this.tracker.cleared();
        up.clear();
        return this.send({ type: 'input.cleared' });
      case 'response.create':
        if (!this.agent.handle(e, up)) return;
        this.tracker.createRequested();
        this.trace.turnEnded();
        return;
      case 'response.cancel': {
        const target = this.tracker.cancel();
        if (target === null) return this.refuse(REQUEST_ERRORS.cancelNotActive.code, REQUEST_ERRORS.cancelNotActive.message, e.eventId);
        return up.cancelResponse(target.upstreamId, target.playedMs);
      }
      default:
        this.agent.handle(e, up);
    }
  }

  /** An error event for one client event; the socket stays open unless the client keeps doing it. */
  private refuse(
    code: Extract<InternalServerEvent, { type: 'error' }>['code'],
    message: string,
    clientEventId: string | undefined,
    param?: string,
    wireParam?: string,
  ): void {
    this.send({ type: 'error', code, message, clientEventId, param, wireParam });
    if (this.abuse.record(Date.now())) {
      this.log.info('closing abusive client');
      void this.finish('abuse');
    }
  }

  // ---- upstream → client ----

  private readonly onUpstreamEvent = (e: UpstreamEvent): void => {
    try {
      this.activation.pass(e);
    } catch (err) {
      this.crash(err);
    }
  };

  private handleUpstream(e: UpstreamEvent): void {
    switch (e.type) {
      case 'audio_delta': {
        this.tracker.delta(e.responseId, e.pcm.length);
        const place = this.agent.audioPlace(e);
        if (this.state !== FINISHING && this.ws.readyState === WebSocket.OPEN) {
          this.ws.send(this.ctx.codec.encode({ type: 'response.audio.delta', ...place, pcm: e.pcm }), TEXT_FRAME);
          this.ctx.telemetry.frameOut();
          this.trace.audioOut(place.responseId);
        }
        return this.usageChanged();
      }
      case 'audio_done':
        return this.send({ type: 'response.audio.done', ...this.agent.audioPlace(e) });
      case 'error':
        // The provider's own text may name the provider, a model or a URL: it goes to the log only.
        this.log.warn({ fatal: e.fatal, upstream_message: e.message }, 'upstream error');
        if (e.fatal) return this.fail('upstream_failure');
        if (this.agent.upstreamRefused(e)) return;
        this.tracker.requestFailed();
        this.send({ type: 'error', ...REQUEST_ERRORS.upstreamRefused });
        if (!this.tracker.expectingResponse) this.waiter.release();
        return;
      case 'closed':
        if (e.unexpected) {
          this.log.warn('upstream closed unexpectedly');
          this.fail('upstream_failure');
        }
        return this.waiter.release();
      default: {
        if (this.agent.isAgentUpstreamEvent(e)) return this.agent.upstream(e);
        const event = this.tracker.clientEventFor(e);
        if (event) this.send(event);
        if (event?.type === 'speech.stopped') this.trace.turnEnded();
        else if (event?.type === 'response.created') this.trace.responseCreated(event.responseId);
        if (e.type !== 'response_done') return;
        if (event?.type === 'response.done') this.trace.responseDone(event.responseId, event.status, event.usage);
        this.usageChanged();
        return this.waiter.release();
      }
    }
  }

  private usageChanged(): void {
    if (this.meter.changed(this.upstream?.usage() ?? null)) this.exhaustBudget();
  }

  private exhaustBudget(): void {
    this.trace.budgetStopped();
    if (this.state === FINISHING) {
      // A client gone mid-answer: stop waiting for the rest of the answer and end the session.
      this.waiter.release();
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
        await this.waiter.wait(this.ctx.config.responseGraceMs);
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
    if (close) closeSocket(this.ws, close);
    try {
      if (final) await final;
      // A legacy socket is its session: closing it ends the session, unless a newer attachment took over.
      if (this.legacy && reason !== 'replaced') await this.endSession('client_closed');
    } finally {
      this.finished = true;
      this.trace.finish(reason, this.usage(), this.ticket.seq);
      this.log.info({ reason, seq: this.ticket.seq }, 'attachment finished');
      this.ctx.onFinished(this);
    }
  }

  private endSession(cause: 'budget_exhausted' | 'upstream_failure' | 'client_closed'): Promise<void> {
    return endSessionWithRetries({ ctx: { ...this.ctx, log: this.log }, input: { sessionId: this.sessionId, cause } });
  }

  private send(e: InternalServerEvent): void {
    sendText(this.ws, this.ctx.codec.encode(e));
    this.ctx.telemetry.frameOut();
  }
}
