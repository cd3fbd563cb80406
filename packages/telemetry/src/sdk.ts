import { hostname } from 'node:os';
import { context, propagation, trace } from '@opentelemetry/api';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { ExpressInstrumentation } from '@opentelemetry/instrumentation-express';
import { HttpInstrumentation } from '@opentelemetry/instrumentation-http';
import { PgInstrumentation } from '@opentelemetry/instrumentation-pg';
import { defaultResource, resourceFromAttributes } from '@opentelemetry/resources';
import { NodeSDK, core } from '@opentelemetry/sdk-node';
import type { NodeSDKConfiguration } from '@opentelemetry/sdk-node';
import {
  AlwaysOffSampler,
  AlwaysOnSampler,
  BatchSpanProcessor,
  ParentBasedSampler,
  TraceIdRatioBasedSampler,
  type Sampler,
  type SpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { ATTR_SERVICE_NAME } from '@opentelemetry/semantic-conventions';
import { SENSITIVE_QUERY_PARAMS } from './redact.js';
import { RedactingSpanProcessor } from './span-processor.js';

export type InstrumentationName = 'http' | 'express' | 'pg';

export interface TelemetryOptions {
  /** `service.name` of every span, e.g. `control-plane`. */
  serviceName: string;
  /** Where the OTEL_* variables are read from; defaults to `process.env`. */
  env?: Record<string, string | undefined>;
  /** Defaults to all three. */
  instrumentations?: readonly InstrumentationName[];
  /** An extra processor (tests: a SimpleSpanProcessor over an InMemorySpanExporter); it sees redacted spans. */
  spanProcessor?: SpanProcessor;
}

export interface Telemetry {
  /** Flushes pending spans, then unregisters everything so `startTelemetry` may run again. */
  shutdown(): Promise<void>;
}

type Instrumentation = NonNullable<NodeSDKConfiguration['instrumentations']>[number] & {
  disable(): void;
};

/** Paths the probes and scrapers hit many times a minute: never traced. */
const UNTRACED_PATHS = new Set(['/healthz', '/readyz']);

let running = false;

/**
 * Starts tracing for this process: first thing in `main.ts`, before building the app or opening servers
 * (start-up flags: `register.ts`). Spans always carry real trace ids; they are exported over OTLP/HTTP only
 * when OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT is set. OTEL_SDK_DISABLED=true turns it all off.
 */
export function startTelemetry(opts: TelemetryOptions): Telemetry {
  const env = opts.env ?? process.env;
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true') return { shutdown: async () => {} };
  if (running) throw new Error('startTelemetry: telemetry is already running in this process');

  const downstream: SpanProcessor[] = [];
  const exporter = otlpExporter(env);
  if (exporter) downstream.push(new BatchSpanProcessor(exporter));
  if (opts.spanProcessor) downstream.push(opts.spanProcessor);

  const instrumentations = buildInstrumentations(opts.instrumentations ?? ['http', 'express', 'pg']);
  // Everything is passed explicitly: NodeSDK would otherwise read process.env and, by default, start OTLP
  // metric and log exporters towards localhost. The redacting processor is always there, so a tracer
  // provider is always registered and spans carry ids even when nothing is exported.
  const sdk = new NodeSDK({
    resource: defaultResource().merge(
      resourceFromAttributes({
        ...parseKeyValues(env.OTEL_RESOURCE_ATTRIBUTES),
        // In Kubernetes the hostname is the pod name: which relay held a socket is visible per span.
        'host.name': hostname(),
        'service.instance.id': `${hostname()}-${process.pid}`,
        [ATTR_SERVICE_NAME]: opts.serviceName,
      }),
    ),
    autoDetectResources: false,
    sampler: new ParentBasedSampler({ root: rootSampler(env, downstream.length > 0) }),
    spanProcessors: [new RedactingSpanProcessor(downstream)],
    metricReaders: [],
    logRecordProcessors: [],
    textMapPropagator: new core.CompositePropagator({
      propagators: [new core.W3CTraceContextPropagator(), new core.W3CBaggagePropagator()],
    }),
    instrumentations,
  });
  sdk.start();
  running = true;

  let stopped: Promise<void> | undefined;
  return {
    shutdown() {
      stopped ??= (async () => {
        try {
          await sdk.shutdown();
        } finally {
          for (const i of instrumentations) i.disable();
          trace.disable();
          propagation.disable();
          context.disable();
          running = false;
        }
      })();
      return stopped;
    },
  };
}

/**
 * With nothing to export, spans are not recorded at all: they still get real trace ids and propagate, but
 * cost almost nothing (recording every span was most of the control plane's CPU per request). With an
 * exporter, OTEL_TRACES_SAMPLER=(parentbased_)traceidratio and OTEL_TRACES_SAMPLER_ARG sample a ratio.
 */
function rootSampler(env: Record<string, string | undefined>, recording: boolean): Sampler {
  if (!recording) return new AlwaysOffSampler();
  const ratio = Number(env.OTEL_TRACES_SAMPLER_ARG);
  if (env.OTEL_TRACES_SAMPLER?.endsWith('traceidratio') && ratio >= 0 && ratio <= 1) {
    return new TraceIdRatioBasedSampler(ratio);
  }
  return new AlwaysOnSampler();
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

function otlpExporter(env: Record<string, string | undefined>): OTLPTraceExporter | undefined {
  const tracesUrl = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim();
  const base = env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim();
  // Per the OTLP spec the signal path is appended to the generic endpoint, never to the per-signal one.
  const url = tracesUrl || (base ? `${base.replace(/\/+$/, '')}/v1/traces` : undefined);
  if (!url) return undefined;
  return new OTLPTraceExporter({
    url,
    headers: parseKeyValues(env.OTEL_EXPORTER_OTLP_TRACES_HEADERS ?? env.OTEL_EXPORTER_OTLP_HEADERS),
  });
}

/** `k1=v1,k2=v2` (values URL-encoded): the format of OTEL_EXPORTER_OTLP_HEADERS and OTEL_RESOURCE_ATTRIBUTES. */
function parseKeyValues(raw: string | undefined): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const pair of (raw ?? '').split(',')) {
    const eq = pair.indexOf('=');
    if (eq <= 0) continue;
    const key = pair.slice(0, eq).trim();
    if (!key) continue;
    const value = pair.slice(eq + 1).trim();
    try {
      headers[key] = decodeURIComponent(value);
    } catch {
      headers[key] = value;
    }
  }
  return headers;
}
