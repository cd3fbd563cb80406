import type { IncomingMessage } from 'node:http';
import { traceHeaders, type MsgHdrs } from '@s2s/bus';
import type { SessionRecord, Usage } from '@s2s/core';
import {
  METRIC_ATTRS,
  RELAY_METRICS,
  SPAN_ATTRS,
  SpanKind,
  SpanStatusCode,
  context,
  createInstrument,
  extractHeaders,
  failSpan,
  gatewayTracer,
  startSessionSpan,
  trace,
  usageAttributes,
  type Context,
  type Meter,
  type Span,
  type Tracer,
} from '@s2s/telemetry';
import type { CheckpointFacts, CheckpointTelemetry, MeteredSource } from './metering/checkpoints.js';

/**
 * The relay's spans and metrics behind a few calls at clear points of an attachment's life, so the
 * attachment code stays about routing. One per process (`RelayTelemetry`), one per socket
 * (`AttachmentTelemetry`). Frame counts are plain additions read at collection time: nothing per frame
 * touches the metrics SDK.
 */
export class RelayTelemetry implements CheckpointTelemetry {
  readonly tracer: Tracer;
  private readonly active;
  private readonly attaches;
  private readonly connectDuration;
  readonly timeToFirstAudio;
  readonly reconnects;
  private readonly publishLag;
  readonly budgetStops;
  /** Frame totals by the provider of the route serving the session at the time. */
  private readonly frameCounts = new Map<string, FrameCount>();

  constructor(
    meter: Meter,
    readonly relayId: string,
  ) {
    this.tracer = gatewayTracer('relay');
    this.active = createInstrument(meter, RELAY_METRICS.activeSessions);
    this.attaches = createInstrument(meter, RELAY_METRICS.attaches);
    this.connectDuration = createInstrument(meter, RELAY_METRICS.upstreamConnectDuration);
    this.timeToFirstAudio = createInstrument(meter, RELAY_METRICS.timeToFirstAudio);
    this.reconnects = createInstrument(meter, RELAY_METRICS.upstreamReconnects);
    this.publishLag = createInstrument(meter, RELAY_METRICS.checkpointPublishLag);
    this.budgetStops = createInstrument(meter, RELAY_METRICS.budgetStops);
    createInstrument(meter, RELAY_METRICS.frames).addCallback((result) => {
      for (const [provider, count] of this.frameCounts) {
        result.observe(count.in, { [METRIC_ATTRS.direction]: 'receive', [METRIC_ATTRS.provider]: provider });
        result.observe(count.out, { [METRIC_ATTRS.direction]: 'transmit', [METRIC_ATTRS.provider]: provider });
      }
    });
  }

  /** The frame totals of one provider's sessions (made once per provider). */
  framesOf(provider: string): FrameCount {
    let count = this.frameCounts.get(provider);
    if (!count) this.frameCounts.set(provider, (count = { in: 0, out: 0 }));
    return count;
  }

  /**
   * The upgrade request's span (`GET /v1/realtime`, server kind), a child of the client's trace context
   * when it sent one. Its checks (key, session, attachment row) run in `context`.
   */
  upgrade(req: IncomingMessage): UpgradeTelemetry {
    const parent = extractHeaders(req.headers);
    const span = this.tracer.startSpan(
      'GET /v1/realtime',
      {
        kind: SpanKind.SERVER,
        attributes: {
          'http.request.method': 'GET',
          'http.route': '/v1/realtime',
          'url.scheme': 'http',
          [SPAN_ATTRS.relayId]: this.relayId,
        },
      },
      parent,
    );
    return new UpgradeTelemetry(span, trace.setSpan(parent, span), this.attaches);
  }

  /**
   * A WebRTC call's request (`POST /v1/realtime/calls`, server kind), started once its session is known: in the
   * session's trace (linked to the client's trace context when it sent one), so the call's attachment span is
   * its child. The attachment row and the answer run in `context`.
   */
  call(req: IncomingMessage, session: SessionRecord, attachmentId: string): UpgradeTelemetry {
    const { span, context: ctx } = startSessionSpan(
      this.tracer,
      'POST /v1/realtime/calls',
      session.traceId,
      {
        kind: SpanKind.SERVER,
        attributes: {
          'http.request.method': 'POST',
          'http.route': '/v1/realtime/calls',
          'url.scheme': 'http',
          [SPAN_ATTRS.relayId]: this.relayId,
          [SPAN_ATTRS.sessionId]: session.id,
          [SPAN_ATTRS.attachmentId]: attachmentId,
        },
      },
      extractHeaders(req.headers),
    );
    return new UpgradeTelemetry(span, ctx, this.attaches);
  }

  /** A socket became an attachment: its span in the session's trace, linked to the upgrade. */
  attachment(session: SessionRecord, attachmentId: string, upgrade: UpgradeTelemetry | undefined): AttachmentTelemetry {
    this.active.add(1);
    // The upgrade's context is passed, not entered: the relay never enters AsyncLocalStorage (on Node 20 its
    // first `run` turns on async hooks for the process, a cost on every promise and socket write after it).
    const { span, context: ctx } = startSessionSpan(
      this.tracer,
      's2s.relay.attachment',
      session.traceId,
      {
        kind: SpanKind.SERVER,
        attributes: {
          [SPAN_ATTRS.sessionId]: session.id,
          [SPAN_ATTRS.attachmentId]: attachmentId,
          [SPAN_ATTRS.relayId]: this.relayId,
          [SPAN_ATTRS.provider]: session.provider,
          [SPAN_ATTRS.model]: session.modelId,
          [SPAN_ATTRS.providerModel]: session.providerModel,
        },
      },
      upgrade?.context ?? context.active(),
    );
    return new AttachmentTelemetry(this, session, span, ctx);
  }

  /** Called by the attachment when its socket is gone. */
  detached(): void {
    this.active.add(-1);
  }

  upstreamConnected(seconds: number, attrs: Record<string, string>): void {
    this.connectDuration.record(seconds, attrs);
  }

  /**
   * An acknowledged checkpoint publish, in a producer span of the attachment's trace (its headers carry
   * that span); its duration, from taking the counters to JetStream's ack, is the publish lag. `publish`
   * gets the context it is published in (passed, not entered).
   */
  async published<T>(source: MeteredSource, m: CheckpointFacts, publish: (ctx: Context) => Promise<T>): Promise<T> {
    const parent = source.trace?.context ?? context.active();
    // Under an attachment span that records nothing (not sampled, or no exporter: the SDK's samplers are
    // parent-based) its child would record nothing either: no span per publish then, only the lag, and the
    // message's headers carry the attachment's trace.
    if (!trace.getSpan(parent)?.isRecording()) {
      const started = performance.now();
      const result = await publish(parent);
      this.publishLag.record((performance.now() - started) / 1000);
      return result;
    }
    const span = this.tracer.startSpan(
      'publish usage.checkpoint',
      {
        kind: SpanKind.PRODUCER,
        attributes: {
          [SPAN_ATTRS.messagingSystem]: 'nats',
          [SPAN_ATTRS.messagingOperation]: 'publish',
          [SPAN_ATTRS.sessionId]: source.sessionId,
          [SPAN_ATTRS.attachmentId]: source.attachmentId,
          [SPAN_ATTRS.checkpointSeq]: m.seq,
          [SPAN_ATTRS.checkpointFinal]: m.final,
          ...usageAttributes(m),
        },
      },
      parent,
    );
    const started = performance.now();
    try {
      const result = await publish(trace.setSpan(parent, span));
      this.publishLag.record((performance.now() - started) / 1000);
      return result;
    } catch (err) {
      failSpan(span, err);
      throw err;
    } finally {
      span.end();
    }
  }
}

/** The upgrade request: refused with a code, or accepted (then `attachment()` takes over). */
export class UpgradeTelemetry {
  private ended = false;

  constructor(
    private readonly span: Span,
    readonly context: Context,
    private readonly attaches: { add(n: number, attrs?: Record<string, string>): void },
  ) {}

  /** The session is known: its attributes go on the upgrade span too. */
  session(sessionId: string, attachmentId: string): void {
    this.span.setAttributes({ [SPAN_ATTRS.sessionId]: sessionId, [SPAN_ATTRS.attachmentId]: attachmentId });
  }

  /** Refused with a contract error code and its HTTP status (none: the client left before the upgrade). */
  refused(code: string, status?: number): void {
    if (this.ended) return;
    this.ended = true;
    this.attaches.add(1, { [METRIC_ATTRS.errorType]: code });
    this.span.setAttribute(SPAN_ATTRS.errorType, code);
    if (status !== undefined) this.span.setAttribute('http.response.status_code', status);
    if (status === undefined || status >= 500) this.span.setStatus({ code: SpanStatusCode.ERROR });
    this.span.end();
  }

  /** Accepted: 101 for a WebSocket upgrade, 201 for a WebRTC call's answer. */
  upgraded(status = 101): void {
    if (this.ended) return;
    this.ended = true;
    this.attaches.add(1);
    this.span.setAttribute('http.response.status_code', status);
    this.span.end();
  }
}

/** One response turn's span: from the end of the user turn (or the response's creation) to its end. */
/** Client frames in and out, kept as plain numbers and observed at collection time. */
interface FrameCount {
  in: number;
  out: number;
}

interface Turn {
  span: Span;
  startedAt: number;
  firstAudio: boolean;
}

/**
 * One attachment: the span of its life (`s2s.relay.attachment`, in the session's trace), its upstream
 * connection, each response turn with its time to first audio, and the context its checkpoints are
 * published in.
 */
export class AttachmentTelemetry {
  /** Trace headers of the attachment span, made once: every checkpoint of the attachment carries them. */
  readonly headers: MsgHdrs;
  private turnEndedAt: number | null = null;
  private readonly turns = new Map<string, Turn>();
  private finished = false;
  private budgetStop = false;
  /** The provider of the route serving the session (a failover route's after a move to it). */
  private provider: string;
  private frames: FrameCount;

  constructor(
    private readonly relay: RelayTelemetry,
    private readonly session: SessionRecord,
    private readonly span: Span,
    readonly context: Context,
  ) {
    this.headers = traceHeaders(context);
    this.provider = session.provider;
    this.frames = relay.framesOf(session.provider);
  }

  private get providerAttrs(): Record<string, string> {
    return { [METRIC_ATTRS.provider]: this.provider };
  }

  /** A client frame in or out (per frame: one addition), counted for the provider serving now. */
  frameIn(): void {
    this.frames.in++;
  }

  frameOut(): void {
    this.frames.out++;
  }

  /** The session moved to a failover route: its frames and first-audio times are counted under `provider`. */
  routeChanged(provider: string): void {
    this.provider = provider;
    this.frames = this.relay.framesOf(provider);
    this.span.addEvent('upstream.route', { [SPAN_ATTRS.provider]: provider });
  }

  /**
   * Wraps the opening of the upstream in a client span and the connect-duration histogram; `open` gets the
   * callback to call when it connects again after a failed attempt (an upstream reconnect), and the connect
   * span's context (passed, not entered) for an adapter that propagates the trace.
   */
  async upstreamOpen<T>(open: (onRetry: (provider?: string) => void, ctx: Context) => Promise<T>): Promise<T> {
    const started = performance.now();
    const span = this.relay.tracer.startSpan(
      's2s.relay.upstream.connect',
      {
        kind: SpanKind.CLIENT,
        attributes: { [SPAN_ATTRS.provider]: this.session.provider, [SPAN_ATTRS.providerModel]: this.session.providerModel },
      },
      this.context,
    );
    try {
      // In the connect span: an adapter that propagates the trace (the simulator's) sends its traceparent.
      // `provider`: the route a session's move tries (a failover route names its own provider).
      const onRetry = (provider?: string) => {
        this.relay.reconnects.add(1, provider ? { ...this.providerAttrs, [METRIC_ATTRS.provider]: provider } : this.providerAttrs);
        span.addEvent('upstream.reconnect');
      };
      const up = await open(onRetry, trace.setSpan(this.context, span));
      this.relay.upstreamConnected((performance.now() - started) / 1000, this.providerAttrs);
      return up;
    } catch (err) {
      failSpan(span, err);
      const kind = errorKind(err);
      this.relay.upstreamConnected((performance.now() - started) / 1000, { ...this.providerAttrs, [METRIC_ATTRS.errorType]: kind });
      throw err;
    } finally {
      span.end();
    }
  }

  /** The user's turn ended (commit, response.create, speech stopped): the time to first audio counts from here. */
  turnEnded(): void {
    this.turnEndedAt ??= performance.now();
  }

  responseCreated(responseId: string): void {
    if (this.turns.has(responseId)) return;
    const startedAt = this.turnEndedAt ?? performance.now();
    this.turnEndedAt = null;
    const span = this.relay.tracer.startSpan(
      's2s.relay.response',
      {
        kind: SpanKind.INTERNAL,
        startTime: performance.timeOrigin + startedAt,
        attributes: {
          [SPAN_ATTRS.sessionId]: this.session.id,
          [SPAN_ATTRS.responseId]: responseId,
          [SPAN_ATTRS.provider]: this.provider,
          [SPAN_ATTRS.model]: this.session.modelId,
        },
      },
      this.context,
    );
    this.turns.set(responseId, { span, startedAt, firstAudio: false });
  }

  /** An audio delta went to the client: the first of a response records the time to first audio. Per frame: one lookup. */
  audioOut(responseId: string): void {
    const turn = this.turns.get(responseId);
    if (!turn || turn.firstAudio) return;
    turn.firstAudio = true;
    const ms = performance.now() - turn.startedAt;
    turn.span.setAttribute(SPAN_ATTRS.timeToFirstAudioMs, Math.round(ms));
    turn.span.addEvent('first_audio');
    this.relay.timeToFirstAudio.record(ms / 1000, { ...this.providerAttrs, [METRIC_ATTRS.model]: this.session.modelId });
  }

  responseDone(responseId: string, status: string, usage: Usage | null): void {
    const turn = this.turns.get(responseId);
    if (!turn) return;
    this.turns.delete(responseId);
    turn.span.setAttribute('s2s.response.status', status);
    if (usage) turn.span.setAttributes(usageAttributes(usage));
    turn.span.end();
  }

  /** The relay ended the session because its preauthorization was used up. */
  budgetStopped(): void {
    if (this.budgetStop) return;
    this.budgetStop = true;
    this.relay.budgetStops.add(1);
    this.span.addEvent('budget.exhausted');
  }

  /** The socket is gone and its final checkpoint published: the attachment span ends with its usage. */
  finish(reason: string, usage: Usage, finalSeq: number): void {
    if (this.finished) return;
    this.finished = true;
    for (const turn of this.turns.values()) turn.span.end();
    this.turns.clear();
    this.span.setAttributes({ [SPAN_ATTRS.finishReason]: reason, [SPAN_ATTRS.checkpointSeq]: finalSeq, ...usageAttributes(usage) });
    if (reason === 'upstream_failure' || reason === 'internal_error') this.span.setStatus({ code: SpanStatusCode.ERROR });
    this.span.end();
    this.relay.detached();
  }
}

function errorKind(err: unknown): string {
  if (typeof err === 'object' && err !== null && 'kind' in err && typeof err.kind === 'string') return err.kind;
  return 'error';
}
