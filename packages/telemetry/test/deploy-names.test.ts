// The dashboard, the Prometheus adapter rules and the chart's autoscaling name series that exist: every
// `s2s_*` / `http_server_*` name they use is derived from the definitions in metric-names.ts.
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { ALL_METRICS, METRIC_ATTRS, prometheusName } from '../src/index.js';

const DEPLOY = fileURLToPath(new URL('../../../deploy/', import.meta.url));
const SERIES = /\b(?:s2s|http_server)_[a-z0-9_]+\b/g;

function exposedSeries(): Set<string> {
  const out = new Set<string>();
  for (const d of ALL_METRICS) {
    const name = prometheusName(d);
    if (d.kind === 'histogram') for (const s of ['_bucket', '_sum', '_count']) out.add(name + s);
    else out.add(name);
  }
  return out;
}

t.test('every series the deploy files use is one the services emit', async (t) => {
  const adapter = readFileSync(join(DEPLOY, 'prometheus-adapter/values.yaml'), 'utf8');
  // Names the adapter serves to HPAs (its `as:`) are custom metrics, not series.
  const adapterNames = new Set([...adapter.matchAll(/^\s*as:\s*(\S+)\s*$/gm)].map((m) => m[1]));
  const known = exposedSeries();
  // Label names (attributes with dots as underscores) and the database name are not series.
  for (const a of Object.values(METRIC_ATTRS)) known.add(a.replace(/\./g, '_'));
  known.add('s2s_gateway');
  const files: Record<string, string> = {
    'prometheus-adapter/values.yaml': adapter.replace(/^\s*(as|matches):.*$/gm, ''),
    'helm/s2s-gateway/values.yaml': readFileSync(join(DEPLOY, 'helm/s2s-gateway/values.yaml'), 'utf8'),
  };
  for (const f of readdirSync(join(DEPLOY, 'helm/s2s-gateway/dashboards'))) {
    files[`helm/s2s-gateway/dashboards/${f}`] = readFileSync(join(DEPLOY, 'helm/s2s-gateway/dashboards', f), 'utf8');
  }
  let used = 0;
  for (const [file, text] of Object.entries(files)) {
    for (const [name] of text.matchAll(SERIES)) {
      used++;
      t.ok(known.has(name) || adapterNames.has(name), `${file}: ${name}`);
    }
  }
  t.ok(used > 20, 'the files were read');
  t.ok(adapterNames.has('s2s_relay_active_sessions'));
  t.match(files['helm/s2s-gateway/values.yaml'], /metricName: s2s_relay_active_sessions/, 'relay HPA on the adapter metric');
});

t.test('Prometheus names', async (t) => {
  const byName = Object.fromEntries(ALL_METRICS.map((d) => [d.name, prometheusName(d)]));
  t.equal(byName['s2s.relay.active_sessions'], 's2s_relay_active_sessions');
  t.equal(byName['s2s.relay.frames'], 's2s_relay_frames_total');
  t.equal(byName['http.server.request.duration'], 'http_server_request_duration');
  t.equal(new Set(ALL_METRICS.map((d) => d.name)).size, ALL_METRICS.length, 'names are unique');
});
