import { ROOT_CONTEXT, context, propagation, trace, type Context } from '@opentelemetry/api';

/** A plain string map, the shape the bus copies to and from NATS message headers. */
export type TraceCarrier = Record<string, string>;

/**
 * W3C trace context (`traceparent`, `tracestate`, `baggage`) of the active span, or of `ctx`, as headers.
 * Empty when telemetry is off or no span is active.
 */
export function traceHeaders(ctx: Context = context.active()): TraceCarrier {
  const carrier: TraceCarrier = {};
  propagation.inject(ctx, carrier);
  return carrier;
}

/**
 * Runs `fn` inside the trace context carried by `headers` (e.g. a consumed NATS message), so spans it
 * starts become children of the producer's span. Missing or malformed headers give a fresh root context.
 */
export function withExtractedContext<T>(headers: Readonly<Record<string, string | string[] | undefined>> | undefined, fn: () => T): T {
  const extracted = propagation.extract(ROOT_CONTEXT, headers ?? {});
  return context.with(extracted, fn);
}

/** The 32-hex trace id of the active span (or of the span in `ctx`), when there is a valid one. */
export function activeTraceId(ctx: Context = context.active()): string | undefined {
  const spanContext = trace.getSpanContext(ctx);
  if (!spanContext || !trace.isSpanContextValid(spanContext)) return undefined;
  return spanContext.traceId;
}

/**
 * `trace_id` and `span_id` of the span in `ctx`, for log lines written where that context is passed rather
 * than active (the logger's mixin adds them where it is active); empty when there is none.
 */
export function contextLogFields(ctx: Context): { trace_id?: string; span_id?: string } {
  const sc = trace.getSpanContext(ctx);
  return sc && trace.isSpanContextValid(sc) ? { trace_id: sc.traceId, span_id: sc.spanId } : {};
}

/** The trace context carried by request or message headers (root when there is none). */
export function extractHeaders(headers: Readonly<Record<string, string | string[] | undefined>> | undefined): Context {
  return propagation.extract(ROOT_CONTEXT, headers ?? {});
}
