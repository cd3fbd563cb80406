import { hostname } from 'node:os';
import { context, metrics, propagation, trace } from '@opentelemetry/api';
import { ExpressInstrumentation } from '@opentelemetry/instrumentation-express';
import { HttpInstrumentation } from '@opentelemetry/instrumentation-http';
import { PgInstrumentation } from '@opentelemetry/instrumentation-pg';
import { defaultResource, envDetector, processDetector, resourceFromAttributes } from '@opentelemetry/resources';
import { NodeSDK } from '@opentelemetry/sdk-node';
import type { NodeSDKConfiguration } from '@opentelemetry/sdk-node';
// The SDK's own readers of the standard variables (exporter list, OTLP protocol, endpoint, headers,
// timeouts, batch and export intervals). NodeSDK uses them only when it builds every processor itself,
// which would leave no place for the redacting processor in front of the exporters.
import {
  getOtlpMetricExporterFromEnv,
  getPeriodicExportingMetricReaderFromEnv,
  getSpanProcessorsFromEnv,
} from '@opentelemetry/sdk-node/build/src/utils.js';
import { AlwaysOffSampler, type SpanProcessor } from '@opentelemetry/sdk-trace-base';
import { ATTR_SERVICE_NAME } from '@opentelemetry/semantic-conventions';
import { disabledMetrics, meterName, metricsFrom, prometheusReader, type Metrics } from './metrics.js';
import { SENSITIVE_QUERY_PARAMS } from './redact.js';
import { RedactingSpanProcessor } from './span-processor.js';

export type InstrumentationName = 'http' | 'express' | 'pg';

export interface TelemetryOptions {
  /** `service.name` of every span and metric, e.g. `control-plane` (OTEL_SERVICE_NAME overrides it). */
  serviceName: string;
  /** Where the OTEL_* variables are read from; defaults to `process.env`. */
  env?: Record<string, string | undefined>;
  /**
   * Defaults to `http`, plus `pg` when spans are recorded. `express` (a wrapper and a span per middleware,
   * about a fifth of a request's CPU) only when asked for: a service names its routes with `routeNamer`.
   */
  instrumentations?: readonly InstrumentationName[];
  /**
   * The service makes its server spans and `http.server.request.duration` itself (`tracedRequests`, the control
   * plane): `http` is left out of the default instrumentations.
   */
  ownHttpServerSpans?: boolean;
  /** An extra processor (tests: a SimpleSpanProcessor over an InMemorySpanExporter); it sees redacted spans. */
  spanProcessor?: SpanProcessor;
}

export interface Telemetry {
  /** The service's meter and its Prometheus scrape handler (mount it as `GET /metrics`). */
  readonly metrics: Metrics;
  /** Flushes pending spans and metrics, then unregisters everything so `startTelemetry` may run again. */
  shutdown(): Promise<void>;
}

type Instrumentation = NonNullable<NodeSDKConfiguration['instrumentations']>[number] & {
  disable(): void;
};

/** Paths the probes and scrapers hit many times a minute: never traced. */
export const UNTRACED_PATHS: ReadonlySet<string> = new Set(['/healthz', '/readyz', '/metrics']);

let running = false;
let recording = false;

/**
 * Whether this process can record a span at all (telemetry started with a trace exporter or an extra
 * processor). When it cannot, a hot path may skip building spans whose every one would be dropped.
 */
export function spansRecorded(): boolean {
  return recording;
}

/**
 * Starts tracing and metrics for this process: first thing in `main.ts`, before building the app or opening
 * servers (start-up flags: `register.ts`). The standard OTEL_* variables are read by the OpenTelemetry SDK
 * (OTEL_EXPORTER_OTLP_PROTOCOL, _HEADERS, OTEL_RESOURCE_ATTRIBUTES, OTEL_TRACES_SAMPLER, OTEL_PROPAGATORS, …)
 * with one deviation: a signal is exported only when an OTLP endpoint (generic or per signal) or its
 * OTEL_*_EXPORTER is set, never to the SDK's default localhost. Spans always carry real trace ids; with no
 * trace exporter they are not recorded. Metrics are always served for Prometheus scrapes through
 * `metrics.handler`. OTEL_SDK_DISABLED=true turns it all off.
 */
export function startTelemetry(opts: TelemetryOptions): Telemetry {
  const env = opts.env ?? process.env;
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true') {
    return { metrics: disabledMetrics(), shutdown: async () => {} };
  }
  if (running) throw new Error('startTelemetry: telemetry is already running in this process');

  // Nothing recorded: pg's span per query would only cost. http (the caller's traceparent, real trace ids, the
  // HTTP duration metric) stays; `http.route` comes from the service (routeNamer), not from express's wrappers.
  const recordable = signalExported(env, 'TRACES') || opts.spanProcessor !== undefined;
  const defaults: InstrumentationName[] = [...(opts.ownHttpServerSpans ? [] : ['http' as const]), ...(recordable ? ['pg' as const] : [])];
  const instrumentations = buildInstrumentations(opts.instrumentations ?? defaults);
  const scrapes = prometheusReader();
  const sdk = withOtelEnv(env, () => {
    const downstream: SpanProcessor[] = signalExported(env, 'TRACES') ? getSpanProcessorsFromEnv(undefined) : [];
    if (opts.spanProcessor) downstream.push(opts.spanProcessor);
    recording = downstream.length > 0;
    const metricReaders = [scrapes, ...(signalExported(env, 'METRICS') ? [otlpMetricReader()] : [])];
    // The redacting processor is always there, so a tracer provider is always registered and spans carry
    // ids even when nothing is exported. Logs stay with pino: no log record processor.
    const sdk = new NodeSDK({
      // Defaults under the detected resource (OTEL_RESOURCE_ATTRIBUTES, process), which wins.
      resource: defaultResource().merge(
        resourceFromAttributes({
          [ATTR_SERVICE_NAME]: opts.serviceName,
          // In Kubernetes the hostname is the pod name: which relay held a socket is visible per span.
          'host.name': hostname(),
          'service.instance.id': `${hostname()}-${process.pid}`,
        }),
      ),
      // Synchronous detectors only unless OTEL_NODE_RESOURCE_DETECTORS says otherwise: the host detector's
      // asynchronous host.id would hold every span export until it resolves.
      ...(env.OTEL_NODE_RESOURCE_DETECTORS ? {} : { resourceDetectors: [envDetector, processDetector] }),
      // Nothing to export: nothing recorded, not even under a sampled parent (a session's spans are).
      ...(downstream.length > 0 ? {} : { sampler: new AlwaysOffSampler() }),
      spanProcessors: [new RedactingSpanProcessor(downstream)],
      metricReaders,
      logRecordProcessors: [],
      instrumentations,
    });
    sdk.start();
    return sdk;
  });
  running = true;
  const serviceMetrics = metricsFrom(scrapes, metrics.getMeterProvider().getMeter(meterName(opts.serviceName)));

  let stopped: Promise<void> | undefined;
  return {
    metrics: serviceMetrics,
    shutdown() {
      stopped ??= (async () => {
        try {
          await sdk.shutdown();
        } finally {
          for (const i of instrumentations) i.disable();
          trace.disable();
          metrics.disable();
          propagation.disable();
          context.disable();
          running = false;
          recording = false;
        }
      })();
      return stopped;
    },
  };
}

/**
 * With nothing to export, spans are not recorded at all: they still get real trace ids and propagate, but
 * cost almost nothing (recording every span was most of the control plane's CPU per request). So a signal
 * is exported when its exporter list names one (`none` first turns it off) or an OTLP endpoint is set.
 */
function signalExported(env: Record<string, string | undefined>, signal: 'TRACES' | 'METRICS'): boolean {
  const exporters = (env[`OTEL_${signal}_EXPORTER`] ?? '')
    .split(',')
    .map((e) => e.trim())
    .filter((e) => e !== '' && e !== 'null');
  // Prometheus is always served by the service itself; the one metrics push exporter is otlp.
  if (exporters.length > 0) return signal === 'METRICS' ? exporters.includes('otlp') : exporters[0] !== 'none';
  return Boolean(env[`OTEL_EXPORTER_OTLP_${signal}_ENDPOINT`]?.trim() || env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim());
}

/** OTLP metrics (protocol, endpoint, headers, OTEL_METRIC_EXPORT_INTERVAL) exactly as the SDK reads them. */
function otlpMetricReader() {
  return getPeriodicExportingMetricReaderFromEnv(getOtlpMetricExporterFromEnv());
}

/**
 * The SDK reads its variables from process.env while its components are built (synchronously, in the
 * constructors and `start()`); an explicit `env` is put in place of the process's OTEL_* ones for that time.
 */
function withOtelEnv<T>(env: Record<string, string | undefined>, build: () => T): T {
  if (env === process.env) return build();
  const isOtel = (k: string) => k.startsWith('OTEL_');
  const saved = Object.fromEntries(Object.entries(process.env).filter(([k]) => isOtel(k)));
  const clear = () => {
    for (const k of Object.keys(process.env)) if (isOtel(k)) delete process.env[k];
  };
  clear();
  for (const [k, v] of Object.entries(env)) if (isOtel(k) && v !== undefined) process.env[k] = v;
  try {
    return build();
  } finally {
    clear();
    Object.assign(process.env, saved);
  }
}

function buildInstrumentations(names: readonly InstrumentationName[]): Instrumentation[] {
  const out: Instrumentation[] = [];
  if (names.includes('http')) {
    out.push(
      new HttpInstrumentation({
        // No header is ever copied into a span (`headersToSpanAttributes` stays unset).
        ignoreIncomingRequestHook: (req) => UNTRACED_PATHS.has((req.url ?? '').split('?')[0] ?? ''),
        redactedQueryParams: SENSITIVE_QUERY_PARAMS,
        redactedQueryParamsServer: SENSITIVE_QUERY_PARAMS,
      }),
    );
  }
  if (names.includes('express')) out.push(new ExpressInstrumentation());
  if (names.includes('pg')) {
    out.push(
      new PgInstrumentation({
        // SQL text only (our queries are parameterized), never the bound values.
        enhancedDatabaseReporting: false,
        // Background loops (billing sweeper) would otherwise make one root trace per query.
        requireParentSpan: true,
      }),
    );
  }
  return out;
}
