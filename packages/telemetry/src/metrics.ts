import type { IncomingMessage, ServerResponse } from 'node:http';
import { createNoopMeter, type Meter } from '@opentelemetry/api';
import { PrometheusExporter, PrometheusSerializer } from '@opentelemetry/exporter-prometheus';
import { defaultResource, resourceFromAttributes } from '@opentelemetry/resources';
import { MeterProvider } from '@opentelemetry/sdk-metrics';
import { ATTR_SERVICE_NAME } from '@opentelemetry/semantic-conventions';

/**
 * What a service gets to record and expose metrics. Create instruments from `meter` with the definitions
 * of metric-names.ts (`createInstrument(metrics.meter, RELAY_METRICS.frames)`), and answer
 * `GET /metrics` on the service's own HTTP server with `handler`.
 */
export interface Metrics {
  readonly meter: Meter;
  /** Prometheus text exposition of every instrument of this process (also HTTP instrumentation's). */
  readonly handler: (req: IncomingMessage, res: ServerResponse) => void;
  /** The text `handler` serves, for tests and diagnostics. */
  scrape(): Promise<string>;
}

/** The exposition format the handler answers with. */
export const PROMETHEUS_CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';

/** A reader serving pull scrapes: no server of its own, the service mounts the handler. */
export function prometheusReader(): PrometheusExporter {
  return new PrometheusExporter({ preventServerStart: true });
}

/** The `Metrics` view over a Prometheus reader registered with a MeterProvider, and a meter from it. */
export function metricsFrom(reader: PrometheusExporter, meter: Meter): Metrics {
  // The exporter's defaults: no prefix, no timestamps, scope labels and target_info kept.
  const serializer = new PrometheusSerializer();
  const scrape = async (): Promise<string> => {
    const { resourceMetrics, errors } = await reader.collect();
    if (errors.length > 0) throw new AggregateError(errors, 'metrics collection failed');
    return serializer.serialize(resourceMetrics);
  };
  return {
    meter,
    scrape,
    handler(_req, res) {
      scrape().then(
        (body) => {
          res.writeHead(200, { 'content-type': PROMETHEUS_CONTENT_TYPE });
          res.end(body);
        },
        () => {
          res.writeHead(500, { 'content-type': 'text/plain' });
          res.end('# metrics collection failed\n');
        },
      );
    },
  };
}

export interface StandaloneMetrics extends Metrics {
  shutdown(): Promise<void>;
}

/**
 * Metrics without the process-wide SDK: a private MeterProvider with a Prometheus reader and no export.
 * For tests and tools that build a service's app without `startTelemetry`; services use
 * `startTelemetry(...).metrics`, which also exports over OTLP and sees the HTTP instrumentation.
 */
export function createMetrics(opts: { serviceName: string }): StandaloneMetrics {
  const reader = prometheusReader();
  const provider = new MeterProvider({
    resource: defaultResource().merge(resourceFromAttributes({ [ATTR_SERVICE_NAME]: opts.serviceName })),
    readers: [reader],
  });
  return { ...metricsFrom(reader, provider.getMeter(meterName(opts.serviceName))), shutdown: () => provider.shutdown() };
}

/** No instruments recorded, an empty scrape: what `OTEL_SDK_DISABLED=true` gives. */
export function disabledMetrics(): Metrics {
  return {
    meter: createNoopMeter(),
    scrape: async () => '',
    handler(_req, res) {
      res.writeHead(200, { 'content-type': PROMETHEUS_CONTENT_TYPE });
      res.end('');
    },
  };
}

/** Instrumentation scope of a service's own instruments (the `otel_scope_name` label on a scrape). */
export function meterName(serviceName: string): string {
  return `s2s.${serviceName}`;
}
