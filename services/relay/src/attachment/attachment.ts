import { newId, toVoiceSession, type SessionRecord, type Usage } from '@s2s/core';
import { agentLimitsOf } from '../config.js';
import type { CheckpointRoute } from '@s2s/contract';
import { activateSession } from '@s2s/sessions';
import { traceHeaders, type Logger } from '@s2s/telemetry';
import type { WebSocket } from 'ws';
import { AgentSession } from '../agent/session.js';
import { ControlBridge } from '../control/bridge.js';
import type { InternalServerEvent } from '../codecs/events.js';
import { Budget } from '../metering/budget.js';
import { BudgetScreen } from '../metering/budget-screen.js';
import type { CheckpointTicket, MeteredSource } from '../metering/checkpoints.js';
import { answerForFinish, finishReasonForError, REQUEST_ERRORS, type FinishReason } from '../realtime-errors.js';
import { ClientToUpstream } from './client-to-upstream.js';
import { sendText } from './client-socket.js';
import type { AttachmentContext, AttachmentInit, AttachmentTelemetry } from './context.js';
import { runFinish, type EndParts, type RelayEndCause } from './end.js';
import { endSessionWithRetries } from './end-session.js';
import { ResponseWaiter } from './response-waiter.js';
import { ResponseTracker } from './responses.js';
import { UpstreamLink } from './upstream-link.js';
import { UpstreamToClient } from './upstream-to-client.js';

export type { FinishReason } from '../realtime-errors.js';
export type { AttachmentContext, AttachmentInit } from './context.js';

/**
 * One live client socket bound to one upstream session: it wires the two directions and runs the end.
 * Client → upstream (ClientToUpstream): the codec decodes, the link opens the upstream and queues until it
 * is open, the budget screen admits input. Upstream → client (UpstreamToClient): activation holds events
 * until `active` is stored, the codec encodes, the tracker keeps turn state. Usage is the upstream's meter
 * (`link.meter`), read by the checkpointer and the budget screen. The hot paths (an append in, an audio
 * delta out) do one decode or encode, a budget screen and a flag; no I/O, no timer.
 */
export class Attachment implements MeteredSource {
  readonly sessionId: string;
  readonly attachmentId: string;
  readonly startedAtMs: number;
  readonly legacy: boolean;

  private readonly ws: WebSocket;
  private readonly session: SessionRecord;
  /** The error for a client secret's settings the session cannot take (answered after session.created). */
  private readonly initialRefusal: InternalServerEvent | null;
  private readonly log: Logger;
  private readonly ticket: CheckpointTicket;
  private readonly screen: BudgetScreen;
  private readonly tracker = new ResponseTracker(() => newId('resp'));
  private readonly agent: AgentSession;
  private readonly link: UpstreamLink;
  private readonly waiter = new ResponseWaiter();
  private readonly fromClient: ClientToUpstream;
  private readonly toClient: UpstreamToClient;
  /** Control sockets of this session (on any relay): what they see and send. */
  private readonly control: ControlBridge;
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
    this.screen = new BudgetScreen(
      new Budget(init.session.rate, init.session.preauthorizedCents, init.prior),
      ctx.checkpoints,
      this.ticket,
    );
    this.agent = new AgentSession(ctx.providers.capabilities(init.session.provider), agentLimitsOf(ctx.config), {
      send: (e) => this.send(e),
      refuse: (code, message, clientEventId, param) => this.fromClient.refuse(code, message, clientEventId, param),
      responseId: (upstreamId) => this.tracker.resolve(upstreamId).id,
    });
    this.initialRefusal = this.agent.stageInitial(init.initial);
    this.log = ctx.logger.child({ session_id: this.sessionId, attachment_id: this.attachmentId, request_id: init.requestId });
    const { session } = init;
    this.link = new UpstreamLink({
      open: (signal) =>
        this.trace.upstreamOpen((onRetry, connectContext) => {
          const settings = { providerModel: session.providerModel, ...this.agent.opening() };
          return ctx.providers.open(session.provider, settings, this.toClient.onEvent, signal, {
            onRetry,
            trace: traceHeaders(connectContext),
            onRoute: (provider) => this.trace.routeChanged(provider),
            context: () => this.agent.replayContext(),
            fallbacks: session.fallbackRoutes ?? [],
          });
        }),
      stage: (e) => this.agent.stageOpening(e),
      opened: (staged) => this.agent.opened(staged),
      apply: (e, up) => this.fromClient.apply(e, up),
      overflow: (e) => this.fromClient.refuse(REQUEST_ERRORS.notReady.code, REQUEST_ERRORS.notReady.message, e.eventId),
      failed: (err) => {
        this.log.warn({ err, provider: session.provider }, 'upstream open failed');
        this.fail('upstream_failure');
      },
      log: this.log,
    });
    const shared = { codec: ctx.codec, link: this.link, screen: this.screen, tracker: this.tracker, agent: this.agent, trace: this.trace };
    this.toClient = new UpstreamToClient({
      ...shared,
      ws: this.ws,
      waiter: this.waiter,
      log: this.log,
      active: init.session.status !== 'ready',
      storeActivation: () => activateSession({ ctx, input: { sessionId: this.sessionId } }),
      alive: () => !this.finished,
      send: (e) => this.send(e),
      fail: (reason) => this.fail(reason),
      exhaustBudget: () => this.exhaustBudget(),
      crash: (err) => this.crash(err),
    });
    this.fromClient = new ClientToUpstream({
      ...shared,
      inputAccepted: () => this.toClient.inputAccepted(),
      signal: (sig) => {
        if (sig.type === 'dtmf') this.control.dtmf(sig.digit, Date.now());
        else void this.finish('hangup');
      },
      send: (e) => this.send(e),
      exhaustBudget: () => this.exhaustBudget(),
      abusive: () => {
        this.log.info('closing abusive client');
        void this.finish('abuse');
      },
      crash: (err) => this.crash(err),
    });
    this.control = new ControlBridge({
      bus: ctx.bus,
      session: { id: session.id, model: session.modelId },
      attachmentId: this.attachmentId,
      accept: this.fromClient.accept,
      snapshot: () => ({
        type: 'session.created',
        session: toVoiceSession(this.session, ctx.config.REALTIME_PUBLIC_URL),
        settings: this.agent.settings(),
      }),
      log: this.log,
    });
    ctx.codec.bind?.(this.fromClient.accept);
  }

  get isFinishing(): boolean {
    return this.link.finishing;
  }

  usage(): Usage {
    return this.link.meter.usage();
  }

  routes(): CheckpointRoute[] {
    return this.link.meter.routes();
  }

  /** Sends the session events; the upstream opens at the first client event (see upstream-link.ts). */
  start(): void {
    const { ws } = this;
    ws.on('message', this.fromClient.onMessage);
    ws.on('close', () => void this.finish('client_closed'));
    // ws closes the socket itself after an error (1007 bad UTF-8, 1009 oversize event, 1002 protocol error).
    ws.on('error', (err) => this.log.debug({ err }, 'client socket error'));
    this.send({
      type: 'session.created',
      session: toVoiceSession(this.session, this.ctx.config.REALTIME_PUBLIC_URL),
      settings: this.agent.settings(),
    });
    this.send({ type: 'conversation.created', conversationId: newId('conv') });
    if (this.initialRefusal) this.send(this.initialRefusal);
    this.control.start();
  }

  private exhaustBudget(): void {
    this.trace.budgetStopped();
    if (this.link.finishing) {
      // A client gone mid-answer: stop waiting for the rest of the answer and end the session.
      this.waiter.release();
      void this.endSession('budget_exhausted');
      return;
    }
    this.fail('budget_exhausted');
  }

  /** Ends the attachment with the reason's error event (if it has one) and close code. */
  private fail(reason: FinishReason): void {
    if (this.link.finishing) return;
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

  /** Ends this attachment once (the first reason wins): see end.ts. */
  finish(reason: FinishReason): Promise<void> {
    if (this.finishing) return this.finishing;
    this.link.stop();
    this.control.stop();
    const end: EndParts = {
      ctx: this.ctx,
      ws: this.ws,
      link: this.link,
      tracker: this.tracker,
      screen: this.screen,
      waiter: this.waiter,
      ticket: this.ticket,
      log: this.log,
      endSession: (cause) => this.endSession(cause),
    };
    this.finishing = runFinish(end, reason, this.legacy).finally(() => {
      this.finished = true;
      const usage = this.usage();
      this.trace.finish(reason, usage, this.ticket.seq);
      // frames_in against audio_in_ms: input the relay read and did not meter shows here (docs/chaos.md).
      const framesIn = this.fromClient.framesIn;
      this.log.info({ reason, seq: this.ticket.seq, frames_in: framesIn, audio_in_ms: usage.audio_in_ms }, 'attachment finished');
      this.ctx.onFinished(this);
    });
    return this.finishing;
  }

  private endSession(cause: RelayEndCause): Promise<void> {
    return endSessionWithRetries({ ctx: { ...this.ctx, log: this.log }, input: { sessionId: this.sessionId, cause } });
  }

  private send(e: InternalServerEvent): void {
    sendText(this.ws, this.ctx.codec.encode(e));
    this.trace.frameOut();
    this.control.forward(e);
  }
}
