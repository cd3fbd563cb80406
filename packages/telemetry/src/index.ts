export { startTelemetry } from './sdk.js';
export type { InstrumentationName, Telemetry, TelemetryOptions } from './sdk.js';
export { createLogger, serializeError } from './logger.js';
export type { Logger, LoggerOptions } from './logger.js';
export { activeTraceId, traceHeaders, withExtractedContext } from './propagation.js';
export type { TraceCarrier } from './propagation.js';
export { RedactingSpanProcessor } from './span-processor.js';
export { REDACTED, redactString } from './redact.js';
