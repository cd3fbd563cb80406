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
});
