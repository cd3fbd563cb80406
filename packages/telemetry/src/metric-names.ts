// Every metric series the gateway emits, in one place: services create their instruments from these
// definitions (`createInstrument`), and deploy/grafana, the chart's autoscaling and docs/observability.md
// use the Prometheus names derived from them. Names follow OpenTelemetry's semantic conventions where one
// exists (http.server.request.duration); our own live under `s2s.` with semconv-style units and attributes.
import type { Counter, Histogram, Meter, ObservableCounter, ObservableGauge, UpDownCounter } from '@opentelemetry/api';

export type InstrumentKind = 'counter' | 'observablecounter' | 'updowncounter' | 'histogram' | 'observablegauge';

export interface MetricDefinition<K extends InstrumentKind = InstrumentKind> {
  /** OpenTelemetry name; the Prometheus name is `prometheusName(def)`. */
  readonly name: string;
  readonly kind: K;
  /** UCUM unit; `{thing}` annotations count things. */
  readonly unit: string;
  readonly description: string;
  /** Histogram bucket boundaries, in `unit`. */
  readonly buckets?: readonly number[];
}

/** Attribute names used on gateway metrics (low cardinality only: never a session id on a metric). */
export const METRIC_ATTRS = {
  /** semconv: the error code (contract error code, e.g. `insufficient_funds`) when the operation failed. */
  errorType: 'error.type',
  /** semconv: `receive` (client → relay) or `transmit` (relay → client). */
  direction: 'network.io.direction',
  /** semconv (gen_ai): the upstream provider, e.g. `local`, `openai`, `gemini`. */
  provider: 'gen_ai.provider.name',
  /** semconv (gen_ai): the public model id, e.g. `openai/gpt-realtime`. */
  model: 'gen_ai.request.model',
  /** The session's terminal status at settlement (`completed`, `expired`, …). */
  sessionStatus: 's2s.session.status',
  /** Why a WebRTC call failed: `ice` or `dtls`. */
  webrtcFailure: 's2s.webrtc.failure',
  /** Why a datagram on the WebRTC port was dropped. */
  webrtcDrop: 's2s.webrtc.drop',
  /** `received` or `lost`. */
  webrtcPackets: 's2s.webrtc.packets',
} as const;

// Seconds: from a few milliseconds (local upstream, fast publish) to a minute (settlement after a grace).
const LATENCY_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 30, 60];

const def = <K extends InstrumentKind>(d: MetricDefinition<K>): MetricDefinition<K> => d;

/** Relay: sockets, frames, upstream connections, turns, checkpoints, budget. */
export const RELAY_METRICS = {
  activeSessions: def({
    name: 's2s.relay.active_sessions',
    kind: 'updowncounter',
    unit: '{session}',
    description: 'Sessions attached to this relay (one socket each); the relay autoscaling metric.',
  }),
  attaches: def({
    name: 's2s.relay.attaches',
    kind: 'counter',
    unit: '{attach}',
    description: 'Attach attempts; refused ones carry error.type (the close or error code).',
  }),
  frames: def({
    name: 's2s.relay.frames',
    // Totals the relay keeps itself (a plain addition per frame), observed at collection time.
    kind: 'observablecounter',
    unit: '{frame}',
    description: 'Realtime WebSocket frames between clients and this relay, by network.io.direction.',
  }),
  upstreamConnectDuration: def({
    name: 's2s.relay.upstream.connect.duration',
    kind: 'histogram',
    unit: 's',
    description: 'Time to open and set up an upstream provider connection (failed ones carry error.type).',
    buckets: LATENCY_BUCKETS,
  }),
  timeToFirstAudio: def({
    name: 's2s.relay.time_to_first_audio',
    kind: 'histogram',
    unit: 's',
    description: 'From the end of the user turn (or response.create) to the first audio delta sent to the client.',
    buckets: LATENCY_BUCKETS,
  }),
  upstreamReconnects: def({
    name: 's2s.relay.upstream.reconnects',
    kind: 'counter',
    unit: '{reconnect}',
    description: 'Upstream connections re-opened during a session.',
  }),
  checkpointPublishLag: def({
    name: 's2s.relay.checkpoint.publish.duration',
    kind: 'histogram',
    unit: 's',
    description: 'From taking a usage checkpoint to JetStream acknowledging its publish.',
    buckets: LATENCY_BUCKETS,
  }),
  budgetStops: def({
    name: 's2s.relay.budget.stops',
    kind: 'counter',
    unit: '{session}',
    description: 'Sessions ended by the relay because their preauthorization was used up.',
  }),
  webrtcCalls: def({
    name: 's2s.relay.webrtc.calls',
    kind: 'observablecounter',
    unit: '{call}',
    description: 'WebRTC calls answered by this relay (POST /v1/realtime/calls); failed ones again by s2s.webrtc.failure (ice, dtls).',
  }),
  webrtcDatagramsDropped: def({
    name: 's2s.relay.webrtc.datagrams_dropped',
    kind: 'observablecounter',
    unit: '{datagram}',
    description:
      'Datagrams on the WebRTC UDP port that belong to no call, by s2s.webrtc.drop (garbage, unknown_ufrag, bad_integrity, unknown_address).',
  }),
  webrtcPackets: def({
    name: 's2s.relay.webrtc.packets',
    kind: 'observablecounter',
    unit: '{packet}',
    description: 'Incoming RTP packets of ended calls: received, and lost (RFC 3550, by sequence number), by s2s.webrtc.packets.',
  }),
  webrtcJitter: def({
    name: 's2s.relay.webrtc.jitter',
    kind: 'histogram',
    unit: 's',
    description: "RFC 3550 interarrival jitter of a call's incoming audio, recorded when the call ends.",
    buckets: [0.001, 0.002, 0.005, 0.01, 0.02, 0.03, 0.05, 0.1, 0.2],
  }),
} as const;

/** Billing: folding, settlement, dead letters, backlog. */
export const BILLING_METRICS = {
  checkpointsFolded: def({
    name: 's2s.billing.checkpoints.folded',
    kind: 'counter',
    unit: '{checkpoint}',
    description: 'Usage checkpoints folded into session usage (duplicates excluded).',
  }),
  settlementLag: def({
    name: 's2s.billing.settlement.lag',
    kind: 'histogram',
    unit: 's',
    description: 'From a session end request to its settlement.',
    buckets: LATENCY_BUCKETS,
  }),
  settlements: def({
    name: 's2s.billing.settlements',
    kind: 'counter',
    unit: '{session}',
    description: 'Sessions settled, by s2s.session.status.',
  }),
  billedCents: def({
    name: 's2s.billing.billed_cents',
    kind: 'counter',
    unit: '{cent}',
    description: 'Cents charged to wallets at settlement.',
  }),
  deadLettered: def({
    name: 's2s.billing.dead_lettered',
    // The worker's own count, observed at collection time.
    kind: 'observablecounter',
    unit: '{message}',
    description: 'Bus messages moved to the dead-letter subject after max_deliver attempts.',
  }),
  consumerPending: def({
    name: 's2s.billing.consumer.pending',
    kind: 'observablegauge',
    unit: '{message}',
    description: 'Messages of the billing durable consumer not yet delivered (num_pending) plus unacknowledged.',
  }),
} as const;

/** Control plane: session creates and money reserved. Requests by route come from HTTP_METRICS. */
export const CONTROL_PLANE_METRICS = {
  sessionCreates: def({
    name: 's2s.session.creates',
    kind: 'counter',
    unit: '{session}',
    description: 'Session create requests; refused ones carry error.type (the contract error code).',
  }),
  reservedCents: def({
    name: 's2s.session.reserved_cents',
    kind: 'counter',
    unit: '{cent}',
    description: 'Cents reserved on wallets by session preauthorizations.',
  }),
} as const;

/**
 * Emitted by the HTTP instrumentation in every service (semconv; attributes http.request.method,
 * http.route, http.response.status_code). Listed for the dashboard and the docs; never created by hand.
 */
export const HTTP_METRICS = {
  serverRequestDuration: def({
    name: 'http.server.request.duration',
    kind: 'histogram',
    unit: 's',
    description: 'Duration of HTTP server requests (the count is the request rate).',
  }),
} as const;

export const ALL_METRICS: readonly MetricDefinition[] = [
  ...Object.values(RELAY_METRICS),
  ...Object.values(BILLING_METRICS),
  ...Object.values(CONTROL_PLANE_METRICS),
  ...Object.values(HTTP_METRICS),
];

/**
 * The series name on a Prometheus scrape: dots become underscores and counters get `_total`, as the
 * OpenTelemetry Prometheus exporter does (it adds no unit suffix); histograms add `_bucket/_sum/_count`.
 */
export function prometheusName(d: MetricDefinition): string {
  const base = d.name.replace(/[^a-zA-Z0-9_:]/g, '_').replace(/_+/g, '_');
  return d.kind === 'counter' || d.kind === 'observablecounter' ? `${base}_total` : base;
}

interface InstrumentOf {
  counter: Counter;
  observablecounter: ObservableCounter;
  updowncounter: UpDownCounter;
  histogram: Histogram;
  observablegauge: ObservableGauge;
}

/** Creates the instrument a definition describes, with its unit, description and buckets. */
export function createInstrument<K extends InstrumentKind>(meter: Meter, d: MetricDefinition<K>): InstrumentOf[K] {
  const options = { unit: d.unit, description: d.description };
  switch (d.kind) {
    case 'counter':
      return meter.createCounter(d.name, options) as InstrumentOf[K];
    case 'observablecounter':
      return meter.createObservableCounter(d.name, options) as InstrumentOf[K];
    case 'updowncounter':
      return meter.createUpDownCounter(d.name, options) as InstrumentOf[K];
    case 'histogram':
      return meter.createHistogram(d.name, {
        ...options,
        ...(d.buckets ? { advice: { explicitBucketBoundaries: [...d.buckets] } } : {}),
      }) as InstrumentOf[K];
    case 'observablegauge':
      return meter.createObservableGauge(d.name, options) as InstrumentOf[K];
    default:
      throw new Error(`unknown instrument kind ${String(d.kind)}`);
  }
}
