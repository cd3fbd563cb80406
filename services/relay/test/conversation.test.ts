import t from 'tap';
import { ResponseDoneEvent, ServerEvent } from '@s2s/contract';
import { billedCents, usageOf } from '@s2s/core';
import {
  attach,
  attachUrl,
  createKey,
  createModel,
  eventually,
  frames,
  insertSession,
  newSession,
  sessionRow,
  setupRelay,
  silence,
  sleep,
  tone,
} from './helpers.js';

t.test('a full turn with the simulator: VAD events, the answer equals the speech, usage per response', async (t) => {
  const env = await setupRelay(t);
  await createModel(env.db, { id: 'local/vad', providerModel: 'vad-1' });
  const key = await createKey(env.db, 10_000);
  const s = await newSession(env.db, key, 'local/vad');
  const { client } = await attach(attachUrl(env.url, s.id), key.secret);

  const speech = tone(1000);
  // The turn ends where 500 ms of silence follow the speech; the last 100 ms arrive after the answer.
  for (const f of frames(Buffer.concat([speech, silence(500)]))) client.append(f);
  const started = await client.next('input_audio_buffer.speech_started');
  t.equal(started.audio_start_ms, 0);
  const stopped = await client.next('input_audio_buffer.speech_stopped');
  t.equal(stopped.audio_end_ms, 1000);
  const created = await client.next('response.created');
  const responseId = (created.response as { id: string }).id;
  t.match(responseId, /^resp_[0-9A-Za-z]{24}$/, 'our own response id, not the provider one');
  t.same(created.response, { id: responseId, status: 'in_progress' });

  const deltas: Buffer[] = [];
  let itemId = '';
  for (;;) {
    const e = await client.next();
    t.ok(ServerEvent.safeParse(e).success, `${e.type} matches the contract`);
    if (e.type === 'response.output_audio.delta') {
      t.equal(e.response_id, responseId);
      t.equal(e.item_id, itemId, 'the delta names the output item');
      deltas.push(Buffer.from(e.audio as string, 'base64'));
    } else if (e.type === 'response.output_audio.done') {
      t.equal(e.response_id, responseId);
    } else if (e.type === 'response.output_item.added') {
      itemId = (e.item as { id: string }).id;
      t.match(itemId, /^item_[0-9A-Za-z]{24}$/, 'a gateway item id');
    } else if (
      e.type.startsWith('response.output_item.') ||
      e.type.startsWith('response.content_part.') ||
      e.type.startsWith('response.output_audio_transcript.') ||
      e.type.startsWith('conversation.item.')
    ) {
      t.equal(e.response_id ?? responseId, responseId);
    } else if (e.type === 'input_audio_buffer.committed') {
      t.match(e.item_id, /^item_[0-9A-Za-z]{24}$/);
    } else if (e.type === 'response.done') {
      const done = ResponseDoneEvent.parse(e);
      t.equal(done.response.id, responseId);
      t.equal(done.response.status, 'completed');
      t.same(done.response.usage, usageOf({ audio_in_ms: 1500, audio_out_ms: 1000, input_audio_tokens: 15, output_audio_tokens: 20 }));
      break;
    } else {
      t.fail(`unexpected ${e.type}`);
    }
  }
  t.ok(Buffer.concat(deltas).equals(speech), 'the answer is the speech, byte for byte');
  t.equal(deltas.length, 10, 'in 100 ms deltas');
  for (const f of frames(silence(100))) client.append(f);
  await client.close();

  const final = await eventually(
    () => env.checkpoints.find((c) => c.session_id === s.id && c.final),
    (c) => c !== undefined,
  );
  t.match(final, { audio_in_ms: 1600, audio_out_ms: 1000, input_audio_tokens: 15, output_audio_tokens: 20, relay_id: env.config.RELAY_ID });
  const raw = JSON.stringify(client.events);
  t.notMatch(raw, /event_\d|"item_\d+"|sess_|127\.0\.0\.1:\d+\/v1\/realtime\?model|vad-1/, 'nothing upstream-specific reached the client');
});

t.test('barge-in: response.cancel mid-answer ends the response as cancelled, billed for what was played', async (t) => {
  const env = await setupRelay(t);
  await createModel(env.db, { id: 'local/vad', providerModel: 'vad-1' });
  const key = await createKey(env.db, 10_000);
  const s = await newSession(env.db, key, 'local/vad');
  const { client } = await attach(attachUrl(env.url, s.id), key.secret);
  for (const f of frames(Buffer.concat([tone(1000), silence(500)]))) client.append(f);
  const created = await client.next('response.created');
  await client.next('response.output_audio.delta');
  client.send({ type: 'response.cancel', event_id: 'cancel1' });
  const done = ResponseDoneEvent.parse(await client.next('response.done'));
  t.equal(done.response.id, (created.response as { id: string }).id);
  t.equal(done.response.status, 'cancelled');
  const played = client.events.filter((e) => e.type === 'response.output_audio.delta').length;
  t.ok(played >= 1 && played < 10, `cut short after ${played} of 10 deltas`);
  t.equal(done.response.usage.audio_out_ms, played * 100, 'only the audio produced is billed');
  t.equal(done.response.usage.output_audio_tokens, played * 2);
  t.notOk(
    client.events.some((e) => e.type === 'response.output_audio.done'),
    'no audio.done for a cancelled response',
  );
  t.notOk(
    client.events.some((e) => e.type === 'error'),
    'no error reaches the client',
  );
  await client.close();
});

t.test('a client gone mid-answer is billed for everything the provider produced', async (t) => {
  const env = await setupRelay(t);
  await createModel(env.db, { id: 'local/vad', providerModel: 'vad-1' });
  const key = await createKey(env.db, 10_000);
  const s = await newSession(env.db, key, 'local/vad');
  const { client } = await attach(attachUrl(env.url, s.id), key.secret);
  for (const f of frames(Buffer.concat([tone(1000), silence(500)]))) client.append(f);
  await client.next('response.output_audio.delta');
  client.ws.terminate();
  const final = await eventually(
    () => env.checkpoints.find((c) => c.session_id === s.id && c.final),
    (c) => c !== undefined,
  );
  t.match(final, { audio_in_ms: 1500, audio_out_ms: 1000, input_audio_tokens: 15, output_audio_tokens: 20 });
  t.equal((await sessionRow(env.db, s.id))?.end_requested_at, null, 'a dropped socket leaves the session attachable');
  const again = await attach(attachUrl(env.url, s.id), key.secret);
  t.equal((again.created.session as { status: string }).status, 'active');
  await again.client.close();
});

t.test('control events reach the upstream: session.update, commit, response.create, clear; its errors stay generic', async (t) => {
  const env = await setupRelay(t);
  await createModel(env.db, { id: 'local/vad', providerModel: 'vad-1' });
  const key = await createKey(env.db, 10_000);
  const s = await newSession(env.db, key, 'local/vad');
  const { client } = await attach(attachUrl(env.url, s.id), key.secret);
  const forwarded = (type: string) => env.simEvents.filter((e) => e.event.type === type).map((e) => e.event);

  client.send({
    type: 'session.update',
    event_id: 'u1',
    session: { voice: 'verse', turn_detection: { type: 'server_vad', silence_duration_ms: 200 } },
  });
  for (const f of frames(Buffer.concat([tone(400), silence(200)]))) client.append(f);
  const first = ResponseDoneEvent.parse(await client.next('response.done'));
  t.same(
    first.response.usage,
    usageOf({ audio_in_ms: 600, audio_out_ms: 400, input_audio_tokens: 6, output_audio_tokens: 8 }),
    'the shorter silence ended the turn',
  );
  t.match(forwarded('session.update').at(-1), {
    session: { audio: { input: { turn_detection: { type: 'server_vad', silence_duration_ms: 200 } }, output: { voice: 'verse' } } },
  });

  // A manual turn: no silence, the client commits and asks for the answer.
  for (const f of frames(tone(300))) client.append(f);
  client.send({ type: 'input_audio_buffer.commit', event_id: 'c1' });
  client.send({ type: 'response.create', event_id: 'r1' });
  // A second response.create while one is under way: the provider refuses it; the client hears a generic error.
  // Sent at once behind the first, so the answer cannot have finished before it arrives (on a loaded machine a
  // 300 ms answer could end before a create sent after response.created reached the simulator).
  client.send({ type: 'response.create', event_id: 'r2' });
  const created = await client.next('response.created');
  const manual = ResponseDoneEvent.parse(await client.next('response.done'));
  t.equal(manual.response.id, (created.response as { id: string }).id);
  t.equal(manual.response.usage.audio_out_ms, 300, 'the committed audio is the answer');
  const err = await eventually(
    () => client.events.find((e) => e.type === 'error'),
    (e) => e !== undefined,
  );
  t.same(err?.error, { type: 'internal_error', code: 'internal_error', message: 'The model could not process the last request.' });
  t.equal(forwarded('input_audio_buffer.commit').length, 1);
  t.equal(forwarded('response.create').length, 2);

  client.send({ type: 'input_audio_buffer.clear' });
  await eventually(
    () => forwarded('input_audio_buffer.clear').length,
    (n) => n === 1,
  );
  t.equal(forwarded('input_audio_buffer.clear').length, 1);
  t.notMatch(
    JSON.stringify(client.events),
    /conversation_already_has_active_response|invalid_request_error.*already/,
    'no provider error text',
  );
  await client.close();
});

t.test('checkpoints: cumulative, seq 1, 2, 3 … while audio flows, then one final', async (t) => {
  const env = await setupRelay(t);
  await createModel(env.db, { id: 'local/echo', providerModel: 'echo-stream' });
  const key = await createKey(env.db, 10_000);
  const s = await newSession(env.db, key, 'local/echo');
  const { client } = await attach(attachUrl(env.url, s.id), key.secret);
  const audio = frames(tone(1000));
  for (const f of audio) {
    client.append(f);
    await sleep(20);
  }
  for (let i = 0; i < audio.length; i++) await client.next('response.output_audio.delta');
  await sleep(250);
  const before = env.checkpoints.filter((c) => c.session_id === s.id).length;
  await sleep(300);
  t.equal(env.checkpoints.filter((c) => c.session_id === s.id).length, before, 'no checkpoint while usage is unchanged');
  await client.close();
  const mine = await eventually(
    () => env.checkpoints.filter((c) => c.session_id === s.id),
    (c) => c.some((x) => x.final),
  );
  t.ok(mine.length >= 4, `${mine.length} checkpoints for 1 s of audio at a 100 ms interval`);
  t.same(
    mine.map((c) => c.seq),
    mine.map((_, i) => i + 1),
    'seq 1, 2, 3, …',
  );
  t.same(
    mine.map((c) => c.final),
    mine.map((_, i) => i === mine.length - 1),
    'only the last is final',
  );
  for (let i = 1; i < mine.length; i++) {
    t.ok((mine[i]?.audio_in_ms ?? 0) >= (mine[i - 1]?.audio_in_ms ?? 0), 'cumulative');
  }
  t.match(mine.at(-1), { audio_in_ms: 1000, audio_out_ms: 1000, final: true });
  t.equal(new Set(mine.map((c) => c.attachment_id)).size, 1);
  const stream = await env.bus.jsm.streams.info(env.bus.subjects.stream);
  t.ok(stream.state.messages >= mine.length, 'published to JetStream');
});

t.test('budget: at the preauthorization the relay stops, says budget_exhausted, ends the session, closes 1000', async (t) => {
  const env = await setupRelay(t);
  const rate = {
    per_minute: 100_000,
    audio_in_token: 0,
    audio_out_token: 0,
    text_in_token: 0,
    text_out_token: 0,
    cached_in_token: 0,
    transcription_per_minute: 0,
    relay_fee_milli_cents: 0,
  };
  const model = await createModel(env.db, { id: 'local/pricey', providerModel: 'echo-stream', rate });
  const key = await createKey(env.db, 10_000);
  // 2 cents: what 601..1200 ms of audio (in + out) cost at 100 cents a minute.
  const sessionId = await insertSession(env.db, key, model, 2);
  const { client } = await attach(attachUrl(env.url, sessionId), key.secret);
  const audio = frames(tone(2000));
  for (const f of audio) client.append(f);
  const err = await eventually(
    () => client.events.find((e) => e.type === 'error'),
    (e) => e !== undefined,
  );
  t.same(err?.error, { type: 'billing_error', code: 'budget_exhausted', message: 'The session reached its preauthorized amount.' });
  const closed = await client.closed;
  t.equal(closed.code, 1000);
  const echoed = client.events.filter((e) => e.type === 'response.output_audio.delta').length;
  t.ok(echoed < audio.length, `forwarding stopped (${echoed} of ${audio.length} frames echoed)`);
  const final = await eventually(
    () => env.checkpoints.find((c) => c.session_id === sessionId && c.final),
    (c) => c !== undefined,
  );
  t.ok(final);
  if (final) {
    t.ok(final.audio_in_ms <= 620, `input stopped at the limit (${final.audio_in_ms} ms)`);
    t.ok(billedCents(rate, final) >= 2, 'the preauthorization was reached');
  }
  const row = await sessionRow(env.db, sessionId);
  t.equal(row?.end_cause, 'budget_exhausted');
  t.equal(row?.terminal_status, 'completed');
  t.ok(
    env.endRequests.some((m) => m.type === 'session.end_requested' && m.session_id === sessionId),
    'end announced on the bus',
  );
});
