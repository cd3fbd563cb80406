export { startTelemetry } from './sdk.js';
export type { InstrumentationName, Telemetry, TelemetryOptions } from './sdk.js';
export { createMetrics, PROMETHEUS_CONTENT_TYPE } from './metrics.js';
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
export { activeTraceId, traceHeaders, withExtractedContext } from './propagation.js';
export type { TraceCarrier } from './propagation.js';
export { RedactingSpanProcessor } from './span-processor.js';
export { REDACTED, redactString } from './redact.js';
