import t from 'tap';
import type { Bus } from '@s2s/bus';
import type { DbHandle } from '@s2s/db';
import { createLogger } from '@s2s/telemetry';
import { createCatalogCache } from '../src/domain/catalog-cache.js';
import { listModels, type CatalogRow } from '../src/domain/catalog.js';
import { adminHeaders, api, startControlPlane, type Harness } from './helpers.js';

// The periodic reload far beyond any test: only the bus message can explain a replica following a change.
const NO_PERIODIC = { CATALOG_REFRESH_MS: '300000' };

const model = (over: Record<string, unknown> = {}) => ({
  id: 'acme/voice-1',
  display_name: 'Acme Voice',
  owned_by: 'acme',
  provider: 'local',
  provider_model: 'voice-1',
  enabled: true,
  approved: true,
  pricing: { per_minute: 600, audio_in_token: 5, audio_out_token: 7, relay_fee_milli_cents: 100 },
  ...over,
});

interface Listed {
  id: string;
  display_name: string;
  pricing: { per_minute: number; rate_snapshot_id: string };
}

async function listed(h: Harness): Promise<Listed[]> {
  const res = await api<{ data: Listed[] }>(h, 'GET', '/v1/models');
  if (res.status !== 200) throw new Error(`GET /v1/models: ${res.status} ${res.text}`);
  return res.body.data;
}

/** Polls until `check` holds for the listing (no timing asserted: a missed change fails after 20 s). */
async function until(h: Harness, what: string, check: (models: Listed[]) => boolean): Promise<Listed[]> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const models = await listed(h);
    if (check(models)) return models;
    if (Date.now() > deadline) throw new Error(`${what}: never seen; last listing ${JSON.stringify(models.map((m) => m.id))}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

async function put(h: Harness, body: unknown): Promise<void> {
  const res = await api(h, 'PUT', '/admin/v1/models', { headers: adminHeaders, json: body });
  if (res.status !== 200) throw new Error(`PUT /admin/v1/models: ${res.status} ${res.text}`);
}

t.test('a second control plane follows every operator change through the bus message', async (t) => {
  const a = await startControlPlane(t, { env: NO_PERIODIC });
  const b = await startControlPlane(t, { env: NO_PERIODIC, replicaOf: a });
  const ids = (models: Listed[]) => models.map((m) => m.id);
  t.same(ids(await listed(b)), ['local/echo-1'], 'the replica holds the seeded catalog');
  t.same(ids(await listed(a)), ['local/echo-1']);

  await put(a, model());
  t.same(ids(await listed(a)), ['acme/voice-1', 'local/echo-1'], 'the changing instance answers with its change at once');
  await until(b, 'new model on the replica', (m) => ids(m).includes('acme/voice-1'));

  await put(a, model({ pricing: { per_minute: 900, audio_in_token: 5, audio_out_token: 7, relay_fee_milli_cents: 100 } }));
  const repriced = await until(b, 'pricing change', (m) => m.find((x) => x.id === 'acme/voice-1')?.pricing.per_minute === 900);
  const { rows } = await a.db.pool.query<{ current_rate_id: string }>(
    `SELECT current_rate_id FROM catalog_models WHERE id = 'acme/voice-1'`,
  );
  t.equal(repriced.find((x) => x.id === 'acme/voice-1')?.pricing.rate_snapshot_id, rows[0]?.current_rate_id, 'the new rate snapshot');

  await put(a, model({ approved: false }));
  await until(b, 'unapproval', (m) => !ids(m).includes('acme/voice-1'));
  t.notOk(ids(await listed(a)).includes('acme/voice-1'));

  await put(a, model({ approved: true }));
  await until(b, 'approval', (m) => ids(m).includes('acme/voice-1'));

  await put(a, model({ enabled: false }));
  await until(b, 'disabling', (m) => !ids(m).includes('acme/voice-1'));

  await put(a, model({ enabled: true, display_name: 'Acme Voice 2' }));
  await until(b, 'rename', (m) => m.find((x) => x.id === 'acme/voice-1')?.display_name === 'Acme Voice 2');

  // And the other way round: the replica's changes reach the first instance.
  await put(b, model({ id: 'acme/voice-2' }));
  await until(a, 'a model added on the replica', (m) => ids(m).includes('acme/voice-2'));
  t.same(ids(await listed(b)), ['acme/voice-1', 'acme/voice-2', 'local/echo-1']);
});

t.test('a lost message: the periodic reload brings the replica up to date', async (t) => {
  const a = await startControlPlane(t, { env: { CATALOG_REFRESH_MS: '200' } });
  t.same(
    (await listed(a)).map((m) => m.id),
    ['local/echo-1'],
  );
  // A change no control plane announced (as if the message were lost): straight into the store.
  await a.db.pool.query(`UPDATE catalog_models SET display_name = 'Renamed Behind Its Back' WHERE id = 'local/echo-1'`);
  await until(a, 'the unannounced change', (m) => m[0]?.display_name === 'Renamed Behind Its Back');
});

t.test('GET /v1/models carries an ETag and answers 304 to a matching If-None-Match', async (t) => {
  const h = await startControlPlane(t, { env: NO_PERIODIC });
  const first = await api(h, 'GET', '/v1/models');
  const etag = first.headers.get('etag');
  t.match(etag, /^"[\w-]+"$/);
  t.equal(first.headers.get('content-type'), 'application/json; charset=utf-8');
  t.equal(Number(first.headers.get('content-length')), Buffer.byteLength(first.text));
  const again = await api(h, 'GET', '/v1/models', { headers: { 'if-none-match': etag! } });
  t.equal(again.status, 304);
  t.equal(again.text, '');
  t.match(again.headers.get('x-request-id'), /^req_/, 'still a request id');
  t.equal(again.headers.get('cache-control'), 'no-store');
  const accessLines = h.logLines.map((l) => JSON.parse(l)).filter((l) => l.msg === 'request completed' && l.path === '/v1/models');
  t.same(
    accessLines.map((l) => [l.status, l.request_id]),
    [
      [200, first.headers.get('x-request-id')],
      [304, again.headers.get('x-request-id')],
    ],
    'one access line each, from the chain (first load) and from memory',
  );
  const cors = await api(h, 'GET', '/v1/models', { headers: { origin: 'https://app.example' } });
  t.equal(cors.status, 200, 'a browser request goes through the chain (CORS) and gets the same body');
  t.equal(cors.text, first.text);
  await put(h, model());
  const changed = await api(h, 'GET', '/v1/models', { headers: { 'if-none-match': etag! } });
  t.equal(changed.status, 200, 'a changed catalog has another ETag');
  t.not(changed.headers.get('etag'), etag);
});

t.test('a load that began before a change never installs its older result', async (t) => {
  // A fake store whose answers the test releases in any order, and a bus that delivers nothing.
  const pending: { rows: CatalogRow[]; resolve: (v: { rows: CatalogRow[] }) => void }[] = [];
  let version = 1;
  const db = {
    pool: {
      query: () =>
        new Promise<{ rows: CatalogRow[] }>((resolve) => {
          pending.push({ rows: [row(`Model v${version}`)], resolve });
        }),
    },
  } as unknown as DbHandle;
  const bus = {
    nc: { isClosed: () => false, closed: () => new Promise(() => {}), subscribe: () => ({ unsubscribe() {} }), publish() {} },
    subjects: { catalogChanged: 'x.catalog.changed' },
  } as unknown as Bus;
  const cache = createCatalogCache(
    { bus, log: createLogger({ service: 'test', level: 'silent' }), load: () => listModels({ ctx: { db } }) },
    300_000,
  );
  t.teardown(() => cache.close());
  const name = async (p: Promise<{ body: Buffer }>) => JSON.parse((await p).body.toString()).data[0].display_name as string;

  const before = cache.get(); // load 1 reads version 1
  version = 2;
  cache.changed('m'); // the store now holds version 2
  const after = cache.get(); // load 2
  t.equal(pending.length, 2, 'a change starts a new load instead of joining the older one');
  pending[1]!.resolve({ rows: pending[1]!.rows });
  pending[0]!.resolve({ rows: pending[0]!.rows }); // the older load finishes last
  t.equal(await name(before), 'Model v1', 'a request that came before the change may see the older catalog');
  t.equal(await name(after), 'Model v2');
  t.equal(await name(cache.get()), 'Model v2', 'the older result was not installed');
  t.equal(pending.length, 2, 'and the newer one is served from memory');
});

function row(displayName: string): CatalogRow {
  return {
    id: 'm',
    display_name: displayName,
    owned_by: 'o',
    provider: 'local',
    provider_model: 'p',
    fallback_routes: [],
    enabled: true,
    approved: true,
    capabilities: {
      speech_to_speech: true,
      server_vad: true,
      barge_in: true,
      input_transcription: 'optional',
      output_transcription: 'optional',
    },
    audio: {} as CatalogRow['audio'],
    modalities: { input: ['audio'], output: ['audio'] },
    created_at: new Date(0),
    rate_id: 'rate_1',
    source: 'upstream_derived',
    per_minute: 1,
    audio_in_token: 1,
    audio_out_token: 1,
    text_in_token: 0,
    text_out_token: 0,
    cached_in_token: 0,
    transcription_per_minute: 0,
    relay_fee_milli_cents: 0,
  };
}

t.test('GET /v1/models ahead of express answers as express does', async (t) => {
  const h = await startControlPlane(t, { env: NO_PERIODIC });
  await api(h, 'GET', '/v1/models'); // the first load goes through the chain
  const shape = (r: Awaited<ReturnType<typeof api>>) => ({
    status: r.status,
    headers: [...r.headers.keys()].sort(),
    contentType: r.headers.get('content-type'),
    cacheControl: r.headers.get('cache-control'),
    etag: r.headers.get('etag'),
    text: r.text,
  });
  const ahead = await api(h, 'GET', '/v1/models?limit=1');
  const routed = await api(h, 'GET', '/v1/models/'); // express's router: the fast path inside express
  const chain = await api(h, 'GET', '/v1/models', { headers: { origin: 'https://app.example' } });
  t.same(shape(ahead), shape(routed), 'the same answer as the route inside express');
  t.same(shape(ahead), shape(chain), 'and as the chain');
  const notModified = await api(h, 'GET', '/v1/models', { headers: { 'if-none-match': ahead.headers.get('etag')! } });
  const notModifiedRouted = await api(h, 'GET', '/v1/models/', { headers: { 'if-none-match': ahead.headers.get('etag')! } });
  t.same(shape(notModified), shape(notModifiedRouted), '304 alike');
  t.equal(notModified.status, 304);
  const head = await api(h, 'HEAD', '/v1/models');
  t.same([head.status, head.headers.get('etag'), head.text], [200, ahead.headers.get('etag'), ''], 'HEAD through express');
  const lines = h.logLines.map((l) => JSON.parse(l)).filter((l) => l.msg === 'request completed');
  const line = (r: Awaited<ReturnType<typeof api>>) => {
    const l = lines.find((x) => x.request_id === r.headers.get('x-request-id'));
    return l && { method: l.method, status: l.status, path: l.path };
  };
  t.same(line(ahead), { method: 'GET', status: 200, path: '/v1/models' }, 'its access line, without the query');
  t.same(line(notModified), { method: 'GET', status: 304, path: '/v1/models' });
  t.same(line(routed), { method: 'GET', status: 200, path: '/v1/models/' });
});
