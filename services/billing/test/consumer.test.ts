import t from 'tap';
import { createHeaders, encodeMessage } from '@s2s/bus';
import type { CheckpointRoute } from '@s2s/contract';
import { toVoiceSession, USAGE_COUNTERS, usageOf, type Usage } from '@s2s/core';
import { loadOwnedSession, requestEnd, sessionActivitySql } from '@s2s/sessions';
import {
  assertLedger,
  attach,
  checkpoint,
  count,
  createOwner,
  createTestSession,
  harness,
  history,
  publish,
  sessionRow,
  startConsumer,
  testConfig,
  waitFor,
  waitSettled,
  walletOf,
} from './fixtures.js';

const step = (audio_in_ms: number, audio_out_ms: number, input_audio_tokens: number, output_audio_tokens: number) => ({
  audio_in_ms,
  audio_out_ms,
  input_audio_tokens,
  output_audio_tokens,
});

t.test('a session with several attachments is billed for all of them, exactly', async (t) => {
  const h = await harness(t);
  const { consumer } = await startConsumer(h, testConfig(h));
  const owner = await createOwner(h.db);
  const s = await createTestSession(h.db, owner);
  const a1 = await attach(h.db, s.id);
  const a2 = await attach(h.db, s.id, 'relay-2');
  // a1: 3000 in / 1500 out ms, 30 / 15 tokens; a2: 4000 / 2000 ms, 40 / 20 tokens.
  await publish(h.bus, history(s.id, a1, [step(1000, 500, 10, 5), step(1000, 500, 10, 5), step(1000, 500, 10, 5)]));
  await publish(h.bus, history(s.id, a2, [step(2000, 1000, 20, 10), step(2000, 1000, 20, 10)]));
  await waitFor('both finals folded', async () => (await count(h.db, `SELECT count(*) FROM session_attachments WHERE final`)) === 2);

  const end = await requestEnd({ ctx: { db: h.db, bus: h.bus }, input: { sessionId: s.id, cause: 'client_closed' } });
  t.equal(end?.terminalStatus, 'completed');
  const row = await waitSettled(h.db, s.id);
  // 0.1 mc/ms * 10 500 ms + 10 * 70 + 20 * 35 + 500 fee = 1050 + 700 + 700 + 500 = 2950 mc -> 3 cents.
  t.match(row, {
    status: 'completed',
    billed_cents: 3,
    reserved_cents: 0,
    audio_in_ms: 7000,
    audio_out_ms: 3500,
    input_audio_tokens: 70,
    output_audio_tokens: 35,
  });
  t.same(await walletOf(h.db, owner.walletId), { balance: 9997, reserved: 0, charges: 1 });
  t.equal(consumer.stats.settled, 1);
  await assertLedger(t, h.db);
});

t.test('duplicates and reordering never count usage twice', async (t) => {
  const h = await harness(t);
  const { consumer } = await startConsumer(h, testConfig(h, { BATCH_SIZE: '3' }));
  const owner = await createOwner(h.db);
  const s = await createTestSession(h.db, owner);
  const a = await attach(h.db, s.id);
  const cps = history(s.id, a, [
    step(30_000, 30_000, 100, 200),
    step(30_000, 30_000, 100, 200),
    step(60_000, 0, 300, 0),
    step(0, 60_000, 0, 600),
  ]);
  // Newest first, each twice with the same Msg-Id (the broker drops it) and once more with another
  // Msg-Id (a republish outside the duplicate window, which the consumer must absorb).
  const reversed = [...cps].reverse();
  await publish(h.bus, reversed);
  await publish(h.bus, reversed);
  for (const c of cps) await h.bus.publish(h.bus.subjects.usageCheckpoint(s.id), c, `${a}:${c.seq}:republished`);
  await waitFor('all delivered', async () => consumer.stats.checkpoints >= 8);

  await requestEnd({ ctx: { db: h.db, bus: h.bus }, input: { sessionId: s.id, cause: 'client_closed' } });
  const row = await waitSettled(h.db, s.id);
  // 240 000 ms * 0.1 = 24 000 + 10 * 500 + 20 * 1000 + 500 = 49 500 mc -> 50 cents.
  t.match(row, {
    status: 'completed',
    billed_cents: 50,
    audio_in_ms: 120_000,
    audio_out_ms: 120_000,
    input_audio_tokens: 500,
    output_audio_tokens: 1000,
  });
  t.same(await walletOf(h.db, owner.walletId), { balance: 9950, reserved: 0, charges: 1 });
  const info = await h.bus.jsm.consumers.info(h.bus.subjects.stream, 'billing');
  t.equal(info.num_redelivered, 0, 'nothing needed a redelivery');
  await assertLedger(t, h.db);
});

t.test('end reasons give the terminal status of decisions.md; no usage bills 0', async (t) => {
  const h = await harness(t);
  await startConsumer(h, testConfig(h));
  const owner = await createOwner(h.db);
  const ready = await createTestSession(h.db, owner);
  const failed = await createTestSession(h.db, owner);
  const timedOut = await createTestSession(h.db, owner);
  const deps = { db: h.db, bus: h.bus };
  await requestEnd({ ctx: deps, input: { sessionId: ready.id, cause: 'client_closed' } });
  await requestEnd({ ctx: deps, input: { sessionId: failed.id, cause: 'error' } });
  await requestEnd({ ctx: deps, input: { sessionId: timedOut.id, cause: 'timeout' } });
  t.match(await waitSettled(h.db, ready.id), { status: 'cancelled', billed_cents: 0, reserved_cents: 0 });
  t.match(await waitSettled(h.db, failed.id), { status: 'failed', billed_cents: 0 });
  t.match(await waitSettled(h.db, timedOut.id), { status: 'expired', billed_cents: 0 });
  t.same(await walletOf(h.db, owner.walletId), { balance: 10_000, reserved: 0, charges: 3 });
  await assertLedger(t, h.db);
});

t.test('an attachment that never sends final settles after the grace, on its last checkpoint', async (t) => {
  const h = await harness(t);
  const { consumer } = await startConsumer(h, testConfig(h, { END_GRACE_MS: '600' }));
  const owner = await createOwner(h.db);
  const s = await createTestSession(h.db, owner);
  const a = await attach(h.db, s.id);
  await publish(h.bus, history(s.id, a, [step(6000, 6000, 0, 0), step(6000, 6000, 0, 0)], false));
  await waitFor('checkpoints folded', async () => (await count(h.db, `SELECT max(seq) FROM session_attachments`)) === 2);
  const end = await requestEnd({ ctx: { db: h.db, bus: h.bus }, input: { sessionId: s.id, cause: 'client_closed' } });
  const row = await waitSettled(h.db, s.id);
  t.ok(row.settled_at!.getTime() - end!.requestedAt.getTime() >= 600, 'not before the grace ran out');
  t.ok(consumer.stats.waited >= 1, 'the end request was put back while waiting');
  // 24 000 ms * 0.1 = 2400 + 500 fee = 2900 mc -> 3 cents.
  t.match(row, { status: 'completed', billed_cents: 3, audio_in_ms: 12_000, audio_out_ms: 12_000 });
  await assertLedger(t, h.db);
});

t.test('a final checkpoint settles an ended session without waiting out the grace', async (t) => {
  const h = await harness(t);
  await startConsumer(h, testConfig(h, { END_GRACE_MS: '60000' }));
  const owner = await createOwner(h.db);
  const s = await createTestSession(h.db, owner);
  const a = await attach(h.db, s.id);
  const cps = history(s.id, a, [step(1000, 1000, 0, 0), step(1000, 1000, 0, 0)]);
  await publish(h.bus, cps.slice(0, 1));
  await requestEnd({ ctx: { db: h.db, bus: h.bus }, input: { sessionId: s.id, cause: 'client_closed' } });
  // The relay answers the end request with its final checkpoint.
  await publish(h.bus, cps.slice(1));
  const row = await waitSettled(h.db, s.id, 10_000);
  // 4000 ms * 0.1 = 400 + 500 = 900 mc -> 1 cent.
  t.match(row, { status: 'completed', billed_cents: 1, audio_in_ms: 2000, audio_out_ms: 2000 });
  await assertLedger(t, h.db);
});

t.test('a checkpoint after settlement is acknowledged and counted as unbilled, never charged', async (t) => {
  const h = await harness(t);
  const { consumer } = await startConsumer(h, testConfig(h));
  const owner = await createOwner(h.db);
  const s = await createTestSession(h.db, owner);
  const a = await attach(h.db, s.id);
  await publish(h.bus, history(s.id, a, [step(60_000, 0, 0, 0)], false));
  await waitFor('folded', async () => (await count(h.db, `SELECT max(seq) FROM session_attachments`)) === 1);
  await requestEnd({ ctx: { db: h.db, bus: h.bus }, input: { sessionId: s.id, cause: 'client_closed' } });
  await waitSettled(h.db, s.id);
  await publish(h.bus, [checkpoint(s.id, a, 2, step(90_000, 0, 0, 0), true)]);
  await waitFor('late checkpoint seen', async () => consumer.stats.lateCheckpoints === 1);
  t.equal(consumer.stats.lateAudioMs, 30_000);
  // 60 000 ms * 0.1 = 6000 + 500 = 6500 mc -> 7 cents, unchanged by the late checkpoint.
  t.match(await sessionRow(h.db, s.id), { billed_cents: 7, audio_in_ms: 60_000 });
  t.equal(await count(h.db, `SELECT seq FROM session_attachments WHERE id = $1`, [a]), 1, 'settled usage is frozen');
  t.same(await walletOf(h.db, owner.walletId), { balance: 9993, reserved: 0, charges: 1 });
  await assertLedger(t, h.db);
});

t.test('unknown sessions and unknown versions are acknowledged, not retried', async (t) => {
  const h = await harness(t);
  const { consumer } = await startConsumer(h, testConfig(h));
  await publish(h.bus, [checkpoint('vs_missing', 'att_missing', 1, step(1000, 0, 0, 0))]);
  const v5 = { ...checkpoint('vs_missing', 'att_x', 1, step(1, 0, 0, 0)), version: 5, extra: true };
  await h.bus.js.publish(h.bus.subjects.usageCheckpoint('vs_missing'), JSON.stringify(v5), { msgID: 'v5' });
  await h.bus.js.publish(
    h.bus.subjects.endRequested('vs_missing'),
    encodeMessage({
      type: 'session.end_requested',
      version: 1,
      session_id: 'vs_missing',
      cause: 'client_closed',
      terminal_status: 'cancelled',
      requested_at: 1,
    }),
    { msgID: 'end:vs_missing' },
  );
  await waitFor('all answered', async () => {
    const info = await h.bus.jsm.consumers.info(h.bus.subjects.stream, 'billing');
    return info.num_pending === 0 && info.num_ack_pending === 0 && consumer.stats.received >= 3;
  });
  t.equal(consumer.stats.unknownSession, 2);
  t.equal(consumer.stats.unknownVersion, 1);
  t.equal(consumer.stats.deadLettered, 0);
  t.equal(consumer.stats.retried, 0);
  t.equal(await count(h.db, `SELECT count(*) FROM session_attachments`), 0);
  await assertLedger(t, h.db);
});

t.test('poison messages go to the dead-letter subject, headers kept, and the rest of the batch is folded', async (t) => {
  const h = await harness(t);
  const { consumer } = await startConsumer(h, testConfig(h, { MAX_DELIVER: '3' }));
  const owner = await createOwner(h.db);
  const s = await createTestSession(h.db, owner);
  const a = await attach(h.db, s.id);

  const hdrs = createHeaders();
  hdrs.set('X-Test', 'kept');
  await h.bus.js.publish(h.bus.subjects.usageCheckpoint(s.id), 'not json', { msgID: 'garbage-1', headers: hdrs });
  // Valid by the schema but beyond the stored int4 seq: fails on every delivery.
  const overflow = checkpoint(s.id, 'att_overflow', 2 ** 31, step(1000, 0, 0, 0));
  await publish(h.bus, [overflow, ...history(s.id, a, [step(12_000, 0, 0, 0)])]);

  await waitFor('two dead letters', async () => consumer.stats.deadLettered === 2);
  t.equal(consumer.stats.retried, 2, 'the failing checkpoint was retried max_deliver - 1 times');
  const dlq = await h.bus.jsm.streams.info(h.bus.subjects.stream, { subjects_filter: h.bus.subjects.deadLetter });
  t.equal(dlq.state.subjects?.[h.bus.subjects.deadLetter], 2);
  const garbage = await h.bus.jsm.streams.getMessage(h.bus.subjects.stream, { seq: await firstDlqSeq(h) });
  if (!garbage) throw new Error('no dead letter stored');
  t.equal(new TextDecoder().decode(garbage.data), 'not json');
  t.equal(garbage.header.get('X-Test'), 'kept');
  t.equal(garbage.header.get('Billing-Original-Msg-Id'), 'garbage-1');
  t.equal(garbage.header.get('Billing-Original-Subject'), h.bus.subjects.usageCheckpoint(s.id));

  await waitFor('both terminated, nothing left to redeliver', async () => {
    const info = await h.bus.jsm.consumers.info(h.bus.subjects.stream, 'billing');
    return info.num_ack_pending === 0 && info.num_pending === 0;
  });

  await requestEnd({ ctx: { db: h.db, bus: h.bus }, input: { sessionId: s.id, cause: 'client_closed' } });
  // 12 000 ms * 0.1 = 1200 + 500 = 1700 mc -> 2 cents.
  t.match(await waitSettled(h.db, s.id), { billed_cents: 2, audio_in_ms: 12_000 });
  await assertLedger(t, h.db);
});

async function firstDlqSeq(h: Awaited<ReturnType<typeof harness>>): Promise<number> {
  const info = await h.bus.jsm.streams.info(h.bus.subjects.stream);
  for (let seq = info.state.first_seq; seq <= info.state.last_seq; seq++) {
    const m = await h.bus.jsm.streams.getMessage(h.bus.subjects.stream, { seq });
    if (m?.subject === h.bus.subjects.deadLetter) return seq;
  }
  throw new Error('no dead letter stored');
}

t.test("checkpoints move the session's activity only when they show new audio; settlement keeps it on the row", async (t) => {
  const h = await harness(t);
  await startConsumer(h, testConfig(h));
  const owner = await createOwner(h.db);
  const s = await createTestSession(h.db, owner);
  const a = await attach(h.db, s.id);
  await h.db.pool.query(`UPDATE voice_sessions SET last_activity_at = now() - interval '100 seconds' WHERE id = $1`, [s.id]);
  const idle = async () =>
    count(h.db, `SELECT extract(epoch FROM now() - ${sessionActivitySql('s')}) FROM voice_sessions s WHERE s.id = $1`, [s.id]);
  await publish(h.bus, [checkpoint(s.id, a, 1, step(0, 0, 0, 0))]);
  await waitFor('seq 1', async () => (await count(h.db, `SELECT max(seq) FROM session_attachments`)) === 1);
  t.ok((await idle()) >= 99, 'no audio: activity unchanged');
  await publish(h.bus, [checkpoint(s.id, a, 2, step(500, 0, 0, 0))]);
  await waitFor('seq 2', async () => (await count(h.db, `SELECT max(seq) FROM session_attachments`)) === 2);
  t.ok((await idle()) < 10, 'new audio: activity moved to the checkpoint time');
  await h.db.pool.query(`UPDATE session_attachments SET last_audio_at = now() - interval '50 seconds' WHERE id = $1`, [a]);
  await publish(h.bus, [checkpoint(s.id, a, 3, { ...step(500, 0, 0, 0), input_text_tokens: 7 })]);
  await waitFor('seq 3', async () => (await count(h.db, `SELECT max(seq) FROM session_attachments`)) === 3);
  t.ok((await idle()) >= 49, 'tokens but no new audio: unchanged');
  await publish(h.bus, [checkpoint(s.id, a, 4, { ...step(900, 100, 0, 0), input_text_tokens: 7 })]);
  await waitFor('seq 4', async () => (await count(h.db, `SELECT max(seq) FROM session_attachments`)) === 4);
  t.ok((await idle()) < 10, 'more audio moves it again');
  await requestEnd({ ctx: { db: h.db, bus: h.bus }, input: { sessionId: s.id, cause: 'client_closed' } });
  await waitSettled(h.db, s.id);
  const settledIdle = await count(h.db, `SELECT extract(epoch FROM now() - last_activity_at) FROM voice_sessions WHERE id = $1`, [s.id]);
  t.ok(settledIdle < 10, 'the settled row keeps the activity of its checkpoints');
  await assertLedger(t, h.db);
});

/** A route's part: the provider, its model and the counters given (the rest 0). */
const part = (provider: string, provider_model: string, c: Partial<Usage>): CheckpointRoute => ({
  provider,
  provider_model,
  ...usageOf(c),
});

t.test('the split by route is stored per attachment, kept at settlement and shown by provider, adding up to the totals', async (t) => {
  const h = await harness(t);
  await startConsumer(h, testConfig(h));
  const owner = await createOwner(h.db);
  const s = await createTestSession(h.db, owner);
  const a1 = await attach(h.db, s.id);
  const a2 = await attach(h.db, s.id, 'relay-2');
  // a1 failed over from OpenAI to an Azure deployment mid-session; a2 (a reattach) was served by Azure only.
  const openai = part('openai', 'gpt-realtime', { audio_in_ms: 1000, audio_out_ms: 500, input_audio_tokens: 10, output_audio_tokens: 5 });
  const azure1 = part('azure', 'dep-a', { audio_in_ms: 2000, audio_out_ms: 700, input_audio_tokens: 20, output_text_tokens: 3 });
  const azure2 = part('azure', 'dep-a', { audio_in_ms: 500, audio_out_ms: 300, input_audio_tokens: 5, output_audio_tokens: 4 });
  // Each checkpoint's totals are the sums of its routes (the relay's meter makes them so).
  const withTotals = (seq: number, final: boolean, parts: CheckpointRoute[], attachment = a1) =>
    checkpoint(
      s.id,
      attachment,
      seq,
      Object.fromEntries(USAGE_COUNTERS.map((k) => [k, parts.reduce((sum, r) => sum + r[k], 0)])),
      final,
      parts,
    );
  await publish(h.bus, [withTotals(1, false, [openai]), withTotals(2, true, [openai, azure1]), withTotals(1, true, [azure2], a2)]);
  await waitFor('both finals folded', async () => (await count(h.db, `SELECT count(*) FROM session_attachments WHERE final`)) === 2);
  const stored = await h.db.pool.query<{ id: string; routes: CheckpointRoute[] }>(
    `SELECT id, routes FROM session_attachments WHERE session_id = $1`,
    [s.id],
  );
  t.same(
    Object.fromEntries(stored.rows.map((r) => [r.id, r.routes])),
    { [a1]: [openai, azure1], [a2]: [azure2] },
    'each attachment keeps its newest split',
  );

  const live = await loadOwnedSession({ ctx: { db: h.db }, input: { sessionId: s.id, keyId: owner.key.keyId } });
  const byProvider = [
    { provider: 'openai', ...usageOf({ audio_in_ms: 1000, audio_out_ms: 500, input_audio_tokens: 10, output_audio_tokens: 5 }) },
    {
      provider: 'azure',
      ...usageOf({ audio_in_ms: 2500, audio_out_ms: 1000, input_audio_tokens: 25, output_audio_tokens: 4, output_text_tokens: 3 }),
    },
  ];
  t.same(live.usageRoutes, byProvider, 'before settlement: the attachments summed by provider');

  await requestEnd({ ctx: { db: h.db, bus: h.bus }, input: { sessionId: s.id, cause: 'client_closed' } });
  await waitSettled(h.db, s.id);
  const settled = await loadOwnedSession({ ctx: { db: h.db }, input: { sessionId: s.id, keyId: owner.key.keyId } });
  const usage = toVoiceSession(settled, 'ws://relay.test/v1/realtime').usage;
  t.same(usage.routes, byProvider, 'after settlement: the same split');
  for (const k of USAGE_COUNTERS)
    t.equal(
      usage.routes!.reduce((sum, r) => sum + r[k], 0),
      usage[k],
      `${k}: the parts add up to the settled total`,
    );
  const settlement = await h.db.pool.query<{ routes: CheckpointRoute[] }>(`SELECT routes FROM settlements WHERE session_id = $1`, [s.id]);
  t.same(
    settlement.rows[0]?.routes,
    [
      openai,
      part('azure', 'dep-a', {
        audio_in_ms: 2500,
        audio_out_ms: 1000,
        input_audio_tokens: 25,
        output_audio_tokens: 4,
        output_text_tokens: 3,
      }),
    ],
    'the settlement keeps the split by route (provider and model)',
  );
  await assertLedger(t, h.db);
});

t.test('checkpoints of versions 1, 2 and 3 are still billed; the split of 1 and 2 is unknown and no route is shown', async (t) => {
  const h = await harness(t);
  await startConsumer(h, testConfig(h));
  const owner = await createOwner(h.db);
  const s = await createTestSession(h.db, owner);
  const a1 = await attach(h.db, s.id);
  const a2 = await attach(h.db, s.id, 'relay-2');
  const a3 = await attach(h.db, s.id, 'relay-3');
  const a4 = await attach(h.db, s.id, 'relay-4');
  const used = { audio_in_ms: 1000, audio_out_ms: 500, input_audio_tokens: 10, output_audio_tokens: 5 };
  const current = part('local', 'echo-1', used);
  const { routes: _none, ...v2 } = { ...checkpoint(s.id, a2, 1, { audio_in_ms: 2000, output_text_tokens: 7 }, true), version: 2 };
  const v1 = {
    type: 'usage.checkpoint',
    version: 1,
    session_id: s.id,
    attachment_id: a3,
    relay_id: 'relay-3',
    seq: 1,
    audio_in_ms: 3000,
    audio_out_ms: 1000,
    input_audio_tokens: 30,
    output_audio_tokens: 10,
    final: true,
    emitted_at: Date.now(),
  };
  // Version 3 (a relay before version 4): the split as objects, each route with its counters.
  const v3Routes = [
    part('openai', 'gpt-realtime', { audio_in_ms: 100, input_audio_tokens: 1 }),
    part('azure', 'dep-a', { audio_in_ms: 300, output_audio_tokens: 2 }),
  ];
  const v3 = {
    ...checkpoint(s.id, a4, 1, { audio_in_ms: 400, input_audio_tokens: 1, output_audio_tokens: 2 }, true),
    version: 3,
    relay_id: 'relay-4',
    routes: v3Routes,
  };
  await publish(h.bus, [checkpoint(s.id, a1, 1, used, true, [current])]);
  await h.bus.js.publish(h.bus.subjects.usageCheckpoint(s.id), JSON.stringify(v3), { msgID: `${a4}:1` });
  await h.bus.js.publish(h.bus.subjects.usageCheckpoint(s.id), JSON.stringify(v2), { msgID: `${a2}:1` });
  await h.bus.js.publish(h.bus.subjects.usageCheckpoint(s.id), JSON.stringify(v1), { msgID: `${a3}:1` });
  await waitFor('every final folded', async () => (await count(h.db, `SELECT count(*) FROM session_attachments WHERE final`)) === 4);
  const stored = await h.db.pool.query<{ id: string; routes: CheckpointRoute[] | null }>(
    `SELECT id, routes FROM session_attachments WHERE session_id = $1`,
    [s.id],
  );
  t.same(Object.fromEntries(stored.rows.map((r) => [r.id, r.routes])), { [a1]: [current], [a2]: null, [a3]: null, [a4]: v3Routes });

  await requestEnd({ ctx: { db: h.db, bus: h.bus }, input: { sessionId: s.id, cause: 'client_closed' } });
  const row = await waitSettled(h.db, s.id);
  t.match(row, { audio_in_ms: 6400, audio_out_ms: 1500, input_audio_tokens: 41, output_audio_tokens: 17 }, 'every version billed');
  const settled = await loadOwnedSession({ ctx: { db: h.db }, input: { sessionId: s.id, keyId: owner.key.keyId } });
  t.equal(settled.usage.output_text_tokens, 7);
  t.equal(settled.usageRoutes, null, 'a part of unknown route: no split shown rather than one that does not add up');
  t.notOk('routes' in toVoiceSession(settled, 'ws://relay.test/v1/realtime').usage, 'usage.routes is absent');
  const settlement = await h.db.pool.query<{ routes: unknown }>(`SELECT routes FROM settlements WHERE session_id = $1`, [s.id]);
  t.equal(settlement.rows[0]?.routes, null);
  await assertLedger(t, h.db);
});
