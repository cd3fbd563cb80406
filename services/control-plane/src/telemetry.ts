import { CONTROL_PLANE_METRICS, METRIC_ATTRS, SPAN_ATTRS, createInstrument, trace, type Meter, type Span } from '@s2s/telemetry';

/**
 * The control plane's own metrics (requests by route and status are the server's
 * `http.server.request.duration`, made by `tracedRequests`): session creates, refused ones by code, and the cents they reserve.
 */
export class ControlPlaneTelemetry {
  private readonly creates;
  private readonly reserved;

  constructor(meter: Meter) {
    this.creates = createInstrument(meter, CONTROL_PLANE_METRICS.sessionCreates);
    this.reserved = createInstrument(meter, CONTROL_PLANE_METRICS.reservedCents);
  }

  /** A session was created (not an idempotent replay): counted, and described on the request's span (default: the active one). */
  created(
    s: { id: string; modelId: string; provider: string; preauthorizedCents: number; reservedCents: number },
    span: Span | undefined = trace.getActiveSpan(),
  ): void {
    this.creates.add(1, { [METRIC_ATTRS.model]: s.modelId });
    this.reserved.add(s.reservedCents);
    span?.setAttributes({
      [SPAN_ATTRS.sessionId]: s.id,
      [SPAN_ATTRS.model]: s.modelId,
      [SPAN_ATTRS.provider]: s.provider,
      [SPAN_ATTRS.preauthorizedCents]: s.preauthorizedCents,
    });
  }

  /** A create refused with a contract error code (`insufficient_funds`, `model_not_found`, …). */
  refused(code: string): void {
    this.creates.add(1, { [METRIC_ATTRS.errorType]: code });
  }
}
