// The fold transaction's statements one by one (and the json_to_recordset upsert billing used before session 13), without NATS: N live attachments (one new checkpoint each per
// round, seq 1..ROUNDS), each variant in its own transaction, variants alternated per round; wall ms.
// BENCH_BASE_DIR=<another checkout> adds its storeCheckpoints, alternated with this one's on the same rows.
//   NODE_OPTIONS=--conditions=@s2s/source npx tsx bench/billing/fold-sql.ts [attachments=10000] [rounds=8]
import { pathToFileURL } from 'node:url';
import { loadavg } from 'node:os';
import { withTransaction } from '@s2s/db';
import { USAGE_COUNTERS } from '@s2s/core';
import { checkpointRoutes, type UsageCheckpoint } from '@s2s/contract';
import { sortedForStore, storeCheckpoints, UPSERT_ATTACHMENTS_SQL, upsertParameters } from '@s2s/billing/bench';
import { checkpoint } from '@s2s/sessions/testing';
import { liveAttachments } from './live-attachments.js';

const N = Number(process.argv[2] ?? 10_000);
const ROUNDS = Number(process.argv[3] ?? 8);
const { testDb, db, live, ids } = await liveAttachments(N);
const C = USAGE_COUNTERS.join(', ');
const UPSERT_JSON_ONLY = `
  INSERT INTO session_attachments AS a (id, session_id, relay_id, seq, final, ${C}, routes, last_audio_at)
  SELECT attachment_id, session_id, relay_id, seq, final, ${C}, routes,
         CASE WHEN audio_in_ms + audio_out_ms > 0 THEN least(now(), to_timestamp(emitted_at / 1000.0)) END
    FROM json_to_recordset($1::json)
      AS t(attachment_id text, session_id text, relay_id text, seq int4, final bool, ${USAGE_COUNTERS.map((k) => `${k} int8`).join(', ')}, routes jsonb, emitted_at int8)
  ON CONFLICT (id) DO UPDATE
     SET seq = EXCLUDED.seq, final = EXCLUDED.final, updated_at = now(), routes = EXCLUDED.routes,
         ${USAGE_COUNTERS.map((k) => `${k} = EXCLUDED.${k}`).join(', ')},
         last_audio_at = CASE WHEN EXCLUDED.audio_in_ms + EXCLUDED.audio_out_ms > a.audio_in_ms + a.audio_out_ms
                              THEN greatest(a.last_audio_at, EXCLUDED.last_audio_at) ELSE a.last_audio_at END
   WHERE a.seq < EXCLUDED.seq AND a.session_id = EXCLUDED.session_id
  RETURNING a.id, a.session_id, a.final`;
const PARSE_ONLY = `SELECT count(*) FROM json_to_recordset($1::json)
      AS t(attachment_id text, session_id text, relay_id text, seq int4, final bool, ${USAGE_COUNTERS.map((k) => `${k} int8`).join(', ')}, routes jsonb, emitted_at int8)`;
/** The JSON parameter of the json_to_recordset upsert (billing's before session 13). */
const upsertParameter = (live: readonly UsageCheckpoint[]) =>
  JSON.stringify(live.map((c) => (c.routes === null ? c : { ...c, routes: checkpointRoutes(c) })));
const timed = async (fn: () => Promise<unknown>) => {
  const t0 = performance.now();
  await fn();
  return performance.now() - t0;
};
const results = new Map<string, number[]>();
const note = (k: string, v: number) => results.set(k, [...(results.get(k) ?? []), v]);
let seq = 0;
const batchOf = () => {
  seq++;
  const usage = { audio_in_ms: 1000 * seq, audio_out_ms: 800 * seq, input_audio_tokens: 10 * seq, output_audio_tokens: 16 * seq };
  return live.map((s) =>
    checkpoint(s.id, s.attachmentId, seq, usage, false, [{ provider: 'local', provider_model: 'bench', ...usage } as never]),
  );
};
const variants: Record<string, () => Promise<unknown>> = {
  storeCheckpoints: () => storeCheckpoints({ ctx: { db }, input: { newest: batchOf() } }),
  'locks only': () =>
    withTransaction({ db }, (sql) =>
      sql.query('SELECT id FROM voice_sessions WHERE id = ANY($1::text[]) ORDER BY id FOR NO KEY UPDATE', [ids]),
    ),
  'advisory locks only': () =>
    withTransaction({ db }, (sql) =>
      sql.query('SELECT pg_advisory_xact_lock(hashtextextended(id, 0)) FROM unnest($1::text[]) AS id', [ids]),
    ),
  'json upsert only (no locks, no readiness)': () =>
    withTransaction({ db }, (sql) =>
      sql.query({ name: 'bench_json_only', text: UPSERT_JSON_ONLY, values: [upsertParameter(sortedForStore(batchOf()))] }),
    ),
  'json parse only (no write)': () =>
    db.pool.query({ name: 'bench_parse', text: PARSE_ONLY, values: [upsertParameter(sortedForStore(batchOf()))] }),
  'column upsert only (no locks, no readiness)': () =>
    withTransaction({ db }, (sql) =>
      sql.query({ name: 'bench_columns', text: UPSERT_ATTACHMENTS_SQL, values: upsertParameters(sortedForStore(batchOf())) }),
    ),
  'sort + column parameters (JS)': async () => upsertParameters(sortedForStore(batchOf())),
  'sort + JSON parameter (JS)': async () => upsertParameter(sortedForStore(batchOf())),
};
const baseDir = process.env.BENCH_BASE_DIR;
if (baseDir) {
  const base = (await import(pathToFileURL(`${baseDir}/services/billing/src/usage-store.ts`).href)) as {
    storeCheckpoints: typeof storeCheckpoints;
  };
  variants['storeCheckpoints of BENCH_BASE_DIR'] = () => base.storeCheckpoints({ ctx: { db }, input: { newest: batchOf() } });
}
for (let r = 1; r <= ROUNDS; r++) {
  const names = Object.keys(variants);
  for (const name of r % 2 ? names : names.reverse()) note(name, await timed(variants[name] as () => Promise<unknown>));
}
const med = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)] ?? NaN;
for (const [k, xs] of results)
  console.log(
    `${k}: median ${med(xs).toFixed(0)} ms (${xs.map((x) => x.toFixed(0)).join(' ')}), ${((med(xs) * 1000) / N).toFixed(1)} µs/row`,
  );
// The column upsert's plan as a named statement gets it after five executions: generic (no parameter values).
const client = await db.pool.connect();
await client.query('SET plan_cache_mode = force_generic_plan');
const explain = await client.query(`EXPLAIN (ANALYZE, BUFFERS) ${UPSERT_ATTACHMENTS_SQL}`, upsertParameters(sortedForStore(batchOf())));
client.release();
console.log(explain.rows.map((r) => r['QUERY PLAN']).join('\n'));
const st = await db.pool.query(`SELECT n_tup_upd, n_tup_hot_upd, n_tup_ins FROM pg_stat_user_tables WHERE relname = 'session_attachments'`);
console.log(JSON.stringify(st.rows[0]));
console.log(
  `${N} attachments, load ${loadavg()
    .map((x) => x.toFixed(1))
    .join(' ')}`,
);
await testDb.drop();
process.exit(0);
