import type { IncomingMessage, ServerResponse } from 'node:http';
import {
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  ValueType,
  context,
  diag,
  metrics,
  propagation,
  trace,
  type Attributes,
  type Context,
  type Histogram,
  type Span,
} from '@opentelemetry/api';
// The HTTP instrumentation's own readers of a request (url.path, redacted url.query, client and server address,
// user agent, …): a recorded span carries exactly the attributes it carried when the instrumentation made it.
import { getIncomingRequestAttributes } from '@opentelemetry/instrumentation-http/build/src/utils.js';
import { VERSION as HTTP_INSTRUMENTATION_VERSION } from '@opentelemetry/instrumentation-http/build/src/version.js';
import { HTTP_METRICS } from './metric-names.js';
import { SENSITIVE_QUERY_PARAMS } from './redact.js';
import { UNTRACED_PATHS, spansRecorded } from './sdk.js';

/**
 * The instrumentation scope of the server spans and of `http.server.request.duration`: the HTTP instrumentation's,
 * so the series keep their `otel_scope_name` label and a backend sees the same spans as before.
 */
const SCOPE = '@opentelemetry/instrumentation-http';
// The instrumentation's buckets, in seconds.
const DURATION_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10];
const KNOWN_METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'CONNECT', 'OPTIONS', 'TRACE', 'PATCH', 'QUERY']);

/** One request's server span, made by `tracedRequests`. */
export interface ServerRequest {
  readonly span: Span;
  /** The caller's trace context (`traceparent`) with this span in it. */
  readonly context: Context;
  /**
   * Whether the handler runs inside `context` (the active context, its emitters bound): when spans are recorded,
   * so that pg's spans and everything else under the request nest. Otherwise nothing is active and the few
   * places that need the trace take it from here (`serverRequestOf`).
   */
  readonly active: boolean;
  /** The route template (`/v1/voice/sessions/:id`) once the app names it: the span's name and `http.route`. */
  route: string | undefined;
}

const REQUEST = Symbol('serverRequest');
type TracedMessage = IncomingMessage & { [REQUEST]?: ServerRequest };

/** The server span of a request `tracedRequests` handles (undefined for untraced paths and other servers). */
export function serverRequestOf(req: IncomingMessage): ServerRequest | undefined {
  return (req as TracedMessage)[REQUEST];
}

/** The 32-hex trace id of the request's server span, when it has a valid one. */
export function requestTraceId(req: IncomingMessage): string | undefined {
  const sc = serverRequestOf(req)?.span.spanContext();
  return sc !== undefined && trace.isSpanContextValid(sc) ? sc.traceId : undefined;
}

/**
 * `trace_id` and `span_id` of the request's span for a log line written where its context is not active (the
 * logger's mixin adds them where it is); empty when there is none.
 */
export function requestLogFields(req: IncomingMessage): { trace_id?: string; span_id?: string } {
  const r = serverRequestOf(req);
  if (r === undefined || r.active) return {};
  const sc = r.span.spanContext();
  return trace.isSpanContextValid(sc) ? { trace_id: sc.traceId, span_id: sc.spanId } : {};
}

function normalizeMethod(method: string | undefined): string {
  if (method === undefined) return 'GET';
  const upper = method.toUpperCase();
  return KNOWN_METHODS.has(upper) ? upper : '_OTHER';
}

type Handler = (req: IncomingMessage, res: ServerResponse) => void;

/**
 * What the HTTP instrumentation did for every request of a server, without its machinery (issue 13): one server
 * span per request, a child of the caller's `traceparent`, named `<METHOD> <route>` when the handler names the
 * route (`serverRequestOf(req).route`), ended when the response closes with `http.response.status_code` and
 * `http.route`; `http.server.request.duration` by method, scheme, protocol version, route and status (and
 * `error.type` for a 5xx or a failed response), same scope and buckets. Paths the probes and scrapers hit
 * (`/healthz`, `/readyz`, `/metrics`) get neither.
 *
 * The difference: when this process records no span (no trace exporter), the handler does not run inside the
 * request's context and `req`/`res` are not bound to it (on Node 20 the AsyncLocalStorage context costs async
 * hooks on every promise of the request, and binding wraps every listener): the span's context is on the request
 * for the places that need it (`requestTraceId`, `requestLogFields`, `serverRequestOf`). When spans are recorded,
 * the handler runs inside it as it did under the instrumentation, so spans made under the request nest.
 *
 * Install it only where the HTTP instrumentation is left out (`startTelemetry({ ownHttpServerSpans: true })`),
 * or every request gets two server spans.
 */
export function tracedRequests(handler: Handler): Handler {
  const tracer = trace.getTracer(SCOPE, HTTP_INSTRUMENTATION_VERSION);
  const duration: Histogram = metrics
    .getMeter(SCOPE, HTTP_INSTRUMENTATION_VERSION)
    .createHistogram(HTTP_METRICS.serverRequestDuration.name, {
      description: 'Duration of HTTP server requests.',
      unit: HTTP_METRICS.serverRequestDuration.unit,
      valueType: ValueType.DOUBLE,
      advice: { explicitBucketBoundaries: DURATION_BUCKETS },
    });
  // The duration's attributes are the same few sets over and over: made once each.
  const metricAttributes = new Map<string, Attributes>();
  const attributesOf = (
    method: string,
    version: string,
    route: string | undefined,
    status: number | undefined,
    error: string | undefined,
  ) => {
    const key = `${method} ${version} ${route ?? ''} ${status ?? ''} ${error ?? ''}`;
    let attrs = metricAttributes.get(key);
    if (attrs === undefined) {
      attrs = { 'http.request.method': method, 'url.scheme': 'http' };
      if (version) attrs['network.protocol.version'] = version;
      if (route !== undefined) attrs['http.route'] = route;
      if (status !== undefined) attrs['http.response.status_code'] = status;
      if (error !== undefined) attrs['error.type'] = error;
      if (metricAttributes.size < 1000) metricAttributes.set(key, attrs);
    }
    return attrs;
  };

  return (req, res) => {
    const url = req.url ?? '';
    const q = url.indexOf('?');
    if (UNTRACED_PATHS.has(q === -1 ? url : url.slice(0, q))) {
      handler(req, res);
      return;
    }
    const started = performance.now();
    const method = normalizeMethod(req.method);
    const recorded = spansRecorded();
    const parent = propagation.extract(ROOT_CONTEXT, req.headers);
    const span = tracer.startSpan(
      method,
      {
        kind: SpanKind.SERVER,
        // A span that is not recorded drops its attributes: only built for one that may be.
        ...(recorded
          ? {
              attributes: getIncomingRequestAttributes(
                req,
                { component: 'http', redactedQueryParams: SENSITIVE_QUERY_PARAMS, enableSyntheticSourceDetection: false },
                diag,
              ),
            }
          : {}),
      },
      parent,
    );
    const request: ServerRequest = { span, context: trace.setSpan(parent, span), active: recorded, route: undefined };
    (req as TracedMessage)[REQUEST] = request;

    res.once('close', () => {
      const { route } = request;
      const failure = res.errored ?? undefined;
      if (failure !== undefined && failure !== null) {
        span.recordException(failure);
        span.setStatus({ code: SpanStatusCode.ERROR, message: failure.message });
        span.setAttribute('error.type', failure.name);
      } else {
        span.setAttribute('http.response.status_code', res.statusCode);
        if (route !== undefined) span.setAttribute('http.route', route);
        if (res.statusCode >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
      }
      if (route !== undefined) span.updateName(`${method} ${route}`);
      span.end();
      const status = failure ? undefined : res.statusCode;
      const error = failure ? failure.name : status !== undefined && status >= 500 ? String(status) : undefined;
      duration.record(
        (performance.now() - started) / 1000,
        attributesOf(method, req.httpVersion, failure ? undefined : route, status, error),
      );
    });

    if (!recorded) {
      handler(req, res);
      return;
    }
    context.with(request.context, () => {
      context.bind(request.context, req);
      context.bind(request.context, res);
      handler(req, res);
    });
  };
}
