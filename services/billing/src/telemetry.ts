import {
  BILLING_METRICS,
  METRIC_ATTRS,
  SPAN_ATTRS,
  SpanKind,
  createInstrument,
  failSpan,
  gatewayTracer,
  usageAttributes,
  type Meter,
  type Span,
} from '@s2s/telemetry';
import type { SettleOutcome } from './settle.js';

/** What the observable instruments read when Prometheus or the OTLP reader collects. */
export interface BillingObservables {
  /** Messages dead-lettered by this process so far. */
  deadLettered(): number;
  /** The durable consumer's backlog: not yet delivered plus delivered and unacknowledged. */
  pending(): Promise<number>;
}

/**
 * Billing's spans and metrics: checkpoints folded, each settlement (its span, in the session's trace when
 * the message that caused it carried it), the end → settled latency, money, dead letters and backlog.
 */
export class BillingTelemetry {
  private readonly tracer = gatewayTracer('billing');
  private readonly folded;
  private readonly lag;
  private readonly settlements;
  private readonly cents;

  constructor(meter: Meter, observables?: BillingObservables) {
    this.folded = createInstrument(meter, BILLING_METRICS.checkpointsFolded);
    this.lag = createInstrument(meter, BILLING_METRICS.settlementLag);
    this.settlements = createInstrument(meter, BILLING_METRICS.settlements);
    this.cents = createInstrument(meter, BILLING_METRICS.billedCents);
    if (observables) {
      createInstrument(meter, BILLING_METRICS.deadLettered).addCallback((r) => r.observe(observables.deadLettered()));
      createInstrument(meter, BILLING_METRICS.consumerPending).addCallback(async (r) => {
        // A bus that does not answer leaves the gauge out of this collection rather than failing it.
        const pending = await observables.pending().catch(() => undefined);
        if (pending !== undefined) r.observe(pending);
      });
    }
  }

  checkpointsFolded(n: number): void {
    this.folded.add(n);
  }

  /**
   * Runs a settlement in its span (`s2s.billing.settle`, a child of the active context: the consumer span
   * of the end request or the session's checkpoint, both in the session's trace) and records its outcome.
   */
  settle<T extends { result: SettleOutcome }>(sessionId: string, fn: () => Promise<T>): Promise<T> {
    return this.tracer.startActiveSpan(
      's2s.billing.settle',
      { kind: SpanKind.INTERNAL, attributes: { [SPAN_ATTRS.sessionId]: sessionId } },
      async (span: Span) => {
        try {
          const out = await fn();
          this.record(span, out.result);
          return out;
        } catch (err) {
          failSpan(span, err);
          throw err;
        } finally {
          span.end();
        }
      },
    );
  }

  private record(span: Span, r: SettleOutcome): void {
    span.setAttribute('s2s.settle.outcome', r.outcome);
    if (r.outcome !== 'settled' && r.outcome !== 'already_settled') return;
    span.setAttributes({ [SPAN_ATTRS.sessionStatus]: r.settlement.status, [SPAN_ATTRS.billedCents]: r.settlement.billedCents });
    if (r.outcome !== 'settled') return;
    span.setAttributes(usageAttributes(r.usage));
    this.settlements.add(1, { [METRIC_ATTRS.sessionStatus]: r.settlement.status });
    this.cents.add(r.settlement.billedCents);
    // Both instants are the database's clock.
    this.lag.record(Math.max(0, r.settlement.settledAt.getTime() - r.endRequestedAt.getTime()) / 1000);
  }
}
