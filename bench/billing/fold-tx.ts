// The store side of part (c), without NATS: one fold transaction (storeCheckpoints) of a batch holding one new
// checkpoint of each of N live attachments, beside a transaction that only takes its session locks and one
// that only reads the same rows, and the store's sort and JSON parameter alone; wall ms of each, seq 1..7 (seq 1 inserts the rows' first counters).
//   NODE_OPTIONS=--conditions=@s2s/source npx tsx bench/billing/fold-tx.ts [attachments=10000]
import { loadavg } from 'node:os';
import { withTransaction } from '@s2s/db';
import { sortedForStore, storeCheckpoints, upsertParameters } from '@s2s/billing/bench';
import { checkpoint } from '@s2s/sessions/testing';
import { liveAttachments } from './live-attachments.js';

const N = Number(process.argv[2] ?? 10_000);
const { testDb, db, live, ids } = await liveAttachments(N);
const timed = async (fn: () => Promise<unknown>) => {
  const t0 = performance.now();
  await fn();
  return (performance.now() - t0).toFixed(0);
};
for (let seq = 1; seq <= 7; seq++) {
  const usage = { audio_in_ms: 1000 * seq, audio_out_ms: 800 * seq, input_audio_tokens: 10 * seq, output_audio_tokens: 16 * seq };
  const batch = live.map((s) => checkpoint(s.id, s.attachmentId, seq, usage));
  const locks = await timed(() =>
    withTransaction({ db }, (sql) =>
      sql.query('SELECT id FROM voice_sessions WHERE id = ANY($1::text[]) ORDER BY id FOR NO KEY UPDATE', [ids]),
    ),
  );
  const reads = await timed(() =>
    withTransaction({ db }, (sql) => sql.query('SELECT id FROM voice_sessions WHERE id = ANY($1::text[]) ORDER BY id', [ids])),
  );
  // Its JavaScript part: the sort and the upsert's JSON parameter.
  const js = await timed(async () => upsertParameters(sortedForStore(batch)));
  const store = await timed(() => storeCheckpoints({ ctx: { db }, input: { newest: batch } }));
  console.log(
    `seq ${seq}, ${N} attachments: locks only ${locks} ms, the same rows read ${reads} ms, storeCheckpoints ${store} ms (its sort and JSON ${js} ms)`,
  );
}
console.log(`load ${loadavg()[0]!.toFixed(1)}`);
await testDb.drop();
process.exit(0);
