import t from 'tap';
import { requestEnd } from '@s2s/sessions';
import { storeCheckpoints } from '../src/usage-store.js';
import { attach, checkpoint, createOwner, createTestSession, harness } from './fixtures.js';

// readyToSettle comes out of the upsert's own statement, which sees the attachments as they were before
// its writes: each case here has a row written in the batch and a row only read.
t.test('a session is ready to settle once its end is requested and every attachment is final', async (t) => {
  const h = await harness(t);
  const ctx = { db: h.db };
  const owner = await createOwner(h.db);
  const s = await createTestSession(h.db, owner);
  const a1 = await attach(h.db, s.id);
  const a2 = await attach(h.db, s.id, 'relay-2');
  const store = async (...cs: ReturnType<typeof checkpoint>[]) => (await storeCheckpoints({ ctx, input: { newest: cs } })).readyToSettle;

  t.same(await store(checkpoint(s.id, a1, 1, { audio_in_ms: 100 }, true)), [], 'end not requested: not ready');
  await requestEnd({ ctx: { db: h.db, bus: h.bus }, input: { sessionId: s.id, cause: 'client_closed' } });
  t.same(await store(checkpoint(s.id, a1, 2, { audio_in_ms: 200 }, true)), [], 'a2, only read, is not final');
  t.same(
    await store(checkpoint(s.id, a1, 3, { audio_in_ms: 300 }, true), checkpoint(s.id, a2, 1, { audio_in_ms: 50 }, false)),
    [],
    'a2, written in the same batch, is not final',
  );
  t.same(await store(checkpoint(s.id, a1, 3, { audio_in_ms: 300 }, true)), [], 'nothing written: nothing becomes ready');
  t.same(await store(checkpoint(s.id, a2, 2, { audio_in_ms: 60 }, true)), [s.id], 'a2 final, a1 final as read');

  const other = await createTestSession(h.db, owner);
  const b1 = await attach(h.db, other.id);
  const b2 = await attach(h.db, other.id, 'relay-2');
  await requestEnd({ ctx: { db: h.db, bus: h.bus }, input: { sessionId: other.id, cause: 'client_closed' } });
  t.same(
    await store(checkpoint(other.id, b1, 1, { audio_in_ms: 10 }, true), checkpoint(other.id, b2, 1, { audio_in_ms: 10 }, true)),
    [other.id],
    'both finals in one batch: ready once',
  );

  // A final and other sessions' non-final checkpoints in one batch (written by two statements).
  const third = await createTestSession(h.db, owner);
  const c1 = await attach(h.db, third.id);
  const c2 = await attach(h.db, third.id, 'relay-2');
  const fourth = await createTestSession(h.db, owner);
  const d1 = await attach(h.db, fourth.id);
  await requestEnd({ ctx: { db: h.db, bus: h.bus }, input: { sessionId: third.id, cause: 'client_closed' } });
  await requestEnd({ ctx: { db: h.db, bus: h.bus }, input: { sessionId: fourth.id, cause: 'client_closed' } });
  t.same(
    await store(checkpoint(third.id, c1, 1, { audio_in_ms: 10 }, true), checkpoint(fourth.id, d1, 1, { audio_in_ms: 10 }, false)),
    [],
    'c2 not final (read), d1 not final (written)',
  );
  t.same(
    await store(checkpoint(third.id, c2, 1, { audio_in_ms: 10 }, true), checkpoint(fourth.id, d1, 2, { audio_in_ms: 20 }, false)),
    [third.id],
    'a final completing one session beside another one still streaming',
  );
  t.same(await store(checkpoint(fourth.id, d1, 3, { audio_in_ms: 30 }, true)), [fourth.id]);
});

// The upsert carries each column as its own parameter, row i of each from the batch's i-th checkpoint: a row
// must get its own ids, counters, flag and routes, whatever characters its ids hold, inserted or updated.
t.test('every stored row gets its own checkpoint: ids with separators and quotes, routes set or unknown', async (t) => {
  const h = await harness(t);
  const owner = await createOwner(h.db);
  const odd = ['att,1', 'att"2', 'att{3}', 'att\\4', 'att 5\t', "att'6", 'NULL'];
  const cases = [];
  for (const [i, id] of odd.entries()) {
    const s = await createTestSession(h.db, owner);
    // Every other attachment has its row already (an update); the rest are inserted by the fold.
    if (i % 2 === 0) await h.db.pool.query(`INSERT INTO session_attachments (id, session_id, relay_id) VALUES ($1, $2, 'r')`, [id, s.id]);
    const counters = {
      audio_in_ms: 1000 + i,
      audio_out_ms: 2000 + i,
      input_audio_tokens: 3 + i,
      output_audio_tokens: 40 + i,
      transcribed_ms: 7 * i,
    };
    const routes = i % 3 === 0 ? null : [{ provider: `p,${i}`, provider_model: `m"${i}`, ...counters }];
    const c = { ...checkpoint(s.id, id, i + 1, counters, i === 3, routes as never), relay_id: `relay,"${i}"` };
    cases.push({ c, routes, relay: i % 2 === 0 ? 'r' : c.relay_id });
  }
  const stored = await storeCheckpoints({ ctx: { db: h.db }, input: { newest: cases.map((x) => x.c) } });
  t.equal(stored.advanced, odd.length);
  const { rows } = await h.db.pool.query(
    `SELECT id, session_id, relay_id, seq, final, audio_in_ms::int, audio_out_ms::int, input_audio_tokens::int,
            output_audio_tokens::int, transcribed_ms::int, routes, last_audio_at IS NOT NULL AS audio_at
       FROM session_attachments`,
  );
  const byId = new Map(rows.map((r) => [r.id, r]));
  for (const { c, routes, relay } of cases) {
    t.same(
      byId.get(c.attachment_id),
      {
        id: c.attachment_id,
        session_id: c.session_id,
        relay_id: relay, // an update keeps the row's relay
        seq: c.seq,
        final: c.final,
        audio_in_ms: c.audio_in_ms,
        audio_out_ms: c.audio_out_ms,
        input_audio_tokens: c.input_audio_tokens,
        output_audio_tokens: c.output_audio_tokens,
        transcribed_ms: c.transcribed_ms,
        routes: routes === null ? null : routes.map((r) => ({ ...r, input_text_tokens: 0, cached_input_tokens: 0, output_text_tokens: 0 })),
        audio_at: true,
      },
      c.attachment_id,
    );
  }
});
