import t from 'tap';
import { BILLING_METRICS, createInstrument, createMetrics } from '../src/index.js';

t.test('createMetrics: a private provider, scraped without the process-wide SDK', async (t) => {
  const metrics = createMetrics({ serviceName: 'billing' });
  t.teardown(() => metrics.shutdown());
  const billed = createInstrument(metrics.meter, BILLING_METRICS.billedCents);
  const pending = createInstrument(metrics.meter, BILLING_METRICS.consumerPending);
  pending.addCallback((r) => r.observe(7));
  billed.add(125);
  billed.add(5);
  const text = await metrics.scrape();
  t.match(text, /^s2s_billing_billed_cents_total\{otel_scope_name="s2s\.billing"\} 130$/m);
  t.match(text, /^s2s_billing_consumer_pending\{otel_scope_name="s2s\.billing"\} 7$/m);
  t.match(text, /^# TYPE s2s_billing_billed_cents_total counter$/m);
});
