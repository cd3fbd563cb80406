export { spansRecorded, startTelemetry } from './sdk.js';
export type { InstrumentationName, Telemetry, TelemetryOptions } from './sdk.js';
export { createMetrics, disabledMetrics, PROMETHEUS_CONTENT_TYPE } from './metrics.js';
export type { Metrics, StandaloneMetrics } from './metrics.js';
export {
  ALL_METRICS,
  BILLING_METRICS,
  CONTROL_PLANE_METRICS,
  HTTP_METRICS,
  METRIC_ATTRS,
  RELAY_METRICS,
  createInstrument,
  prometheusName,
} from './metric-names.js';
export type { InstrumentKind, MetricDefinition } from './metric-names.js';
export { createLogger, serializeError } from './logger.js';
export type { Logger, LoggerOptions } from './logger.js';
export { activeTraceId, contextLogFields, extractHeaders, traceHeaders, withExtractedContext } from './propagation.js';
export { requestLogFields, requestTraceId, serverRequestOf, tracedRequests } from './http-server.js';
export type { ServerRequest } from './http-server.js';
// The OpenTelemetry API the services use, from one place (one version of it in the workspace).
export { SpanKind, SpanStatusCode, context, trace } from '@opentelemetry/api';
export type { Attributes, Context, Meter, Span, Tracer } from '@opentelemetry/api';
export type { TraceCarrier } from './propagation.js';
export { RedactingSpanProcessor } from './span-processor.js';
export { REDACTED, redactString } from './redact.js';
export {
  SPAN_ATTRS,
  failSpan,
  gatewayTracer,
  inSessionSpan,
  sessionContext,
  sessionRootSpanId,
  startSessionSpan,
  usageAttributes,
} from './session-trace.js';
export type { SessionSpanOptions } from './session-trace.js';
