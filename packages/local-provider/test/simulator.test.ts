import t, { type Test } from 'tap';
import type { RealtimeSessionCreateRequest } from 'openai/resources/realtime/realtime';
import { pcmFrames, pcmSilence, pcmTone, startLocalProvider, type LocalProvider, type ReceivedClientEvent } from '../src/index.js';
import { TestClient, deltaBytes, types, type Ev } from './client.js';
import { G711Encoder } from '@s2s/audio';

const KEY = 'sim-test-key-0123456789';

async function provider(
  t: Test,
  opts: { apiKey?: string | null; replyChunkIntervalMs?: number; onClientEvent?: (e: ReceivedClientEvent) => void } = {},
): Promise<LocalProvider> {
  const p = await startLocalProvider({
    port: 0,
    apiKey: opts.apiKey ?? null,
    replyChunkIntervalMs: opts.replyChunkIntervalMs ?? 0,
    ...(opts.onClientEvent ? { onClientEvent: opts.onClientEvent } : {}),
  });
  t.teardown(() => p.close());
  return p;
}

async function client(t: Test, p: LocalProvider, model = 'echo-1', key?: string): Promise<TestClient> {
  const c = await TestClient.connect(p.url, model, key);
  t.teardown(() => c.close());
  await c.next('session.created');
  return c;
}

function sendAll(c: TestClient, pcm: Buffer, frameMs = 20): void {
  for (const f of pcmFrames(pcm, frameMs)) c.append(f);
}

/** Strips event ids so runs can be compared on content. */
const content = (evs: Ev[]) => evs.map(({ event_id: _e, ...rest }) => rest);

t.test('handshake: path, model and bearer key are checked before the upgrade', async (t) => {
  const p = await provider(t, { apiKey: KEY });
  t.equal((await TestClient.refusal(`${p.url}?model=echo-1`)).status, 401, 'no key');
  const wrong = await TestClient.refusal(`${p.url}?model=echo-1`, { Authorization: 'Bearer nope' });
  t.equal(wrong.status, 401, 'wrong key');
  t.equal(JSON.parse(wrong.body).error.code, 'invalid_api_key');
  t.notMatch(wrong.body, KEY, 'the refusal does not echo the key');
  t.equal((await TestClient.refusal(p.url, { Authorization: `Bearer ${KEY}` })).status, 400, 'no model');
  t.equal(
    (await TestClient.refusal(`${p.url.replace('/v1/realtime', '/v1/other')}?model=x`, { Authorization: `Bearer ${KEY}` })).status,
    404,
    'unknown path',
  );
  const c = await TestClient.connect(p.url, 'my-model', KEY);
  t.teardown(() => c.close());
  const created = await c.next('session.created');
  t.equal(created.session.model, 'my-model');
  t.same(created.session.audio.input.format, { type: 'audio/pcm', rate: 24000 });
  t.same(created.session.audio.input.turn_detection, { type: 'server_vad', silence_duration_ms: 500 });
});

t.test('session.update (GA shape) is applied and echoed; G.711 is taken as OpenAI takes it, another rate refused', async (t) => {
  const p = await provider(t);
  const c = await client(t, p);
  c.send({
    type: 'session.update',
    session: {
      type: 'realtime',
      audio: {
        input: { format: { type: 'audio/pcm', rate: 24000 }, turn_detection: { type: 'server_vad', silence_duration_ms: 300 } },
        output: { format: { type: 'audio/pcm', rate: 24000 }, voice: 'shimmer' },
      },
    },
  });
  const updated = await c.next('session.updated');
  t.equal(updated.session.audio.output.voice, 'shimmer');
  t.same(updated.session.audio.input.turn_detection, { type: 'server_vad', silence_duration_ms: 300 });

  c.send({ type: 'session.update', event_id: 'ev1', session: { type: 'realtime', audio: { input: { format: { type: 'audio/pcmu' } } } } });
  const g711 = await c.next('session.updated');
  t.same(g711.session.audio.input.format, { type: 'audio/pcmu' }, 'μ-law in, as OpenAI takes it');
  t.same(g711.session.audio.output.format, { type: 'audio/pcm', rate: 24000 }, 'each direction on its own');
  c.send({ type: 'session.update', session: { type: 'realtime', audio: { output: { format: { type: 'audio/pcma' } } } } });
  t.same((await c.next('session.updated')).session.audio.output.format, { type: 'audio/pcma' });

  c.send({
    type: 'session.update',
    event_id: 'ev2',
    session: { type: 'realtime', audio: { input: { format: { type: 'audio/pcm', rate: 16000 } } } },
  });
  const err = await c.next('error');
  t.match(err.error, { type: 'invalid_request_error', code: 'invalid_event' }, 'another PCM rate is refused');
  c.send({ type: 'input_audio_buffer.clear' });
  t.same((await c.next('input_audio_buffer.cleared')).type, 'input_audio_buffer.cleared', 'the session goes on');
});

/** μ-law or A-law bytes of PCM16 24 kHz, through the gateway's own codec (@s2s/audio). */
function g711Of(law: 'pcmu' | 'pcma', pcm: Buffer): Buffer {
  return new G711Encoder(law).push(pcm);
}

t.test('G.711: server VAD hears decoded μ-law and the answer comes back in the output format, its real length', async (t) => {
  const p = await provider(t);
  const c = await client(t, p);
  c.send({
    type: 'session.update',
    session: { type: 'realtime', audio: { input: { format: { type: 'audio/pcmu' } }, output: { format: { type: 'audio/pcmu' } } } },
  });
  await c.next('session.updated');
  const ulaw = g711Of('pcmu', Buffer.concat([pcmSilence(200), pcmTone(1000), pcmSilence(600)]));
  t.equal(ulaw.length, 1800 * 8, '8 bytes a millisecond');
  for (let off = 0; off < ulaw.length; off += 160) c.append(ulaw.subarray(off, off + 160));
  const evs = await c.until('response.done');
  const started = evs.find((e) => e.type === 'input_audio_buffer.speech_started')!;
  const stopped = evs.find((e) => e.type === 'input_audio_buffer.speech_stopped')!;
  t.ok(Math.abs(started.audio_start_ms - 200) <= 20, `speech starts near 200 ms (${started.audio_start_ms})`);
  t.ok(Math.abs(stopped.audio_end_ms - 1200) <= 20, `and stops near 1200 ms (${stopped.audio_end_ms})`);
  const played = deltaBytes(evs);
  const done = evs.at(-1)!;
  t.same(done.response.audio.output.format, { type: 'audio/pcmu' });
  // The played-back speech is in μ-law: 8 bytes a millisecond, billed as that many milliseconds.
  t.equal(played.length % 8, 0);
  t.equal(done.response.usage.output_token_details.audio_tokens, Math.ceil(played.length / 8 / 50));
  t.ok(played.length / 8 >= 980 && played.length / 8 <= 1040, `about the second of speech (${played.length / 8} ms)`);
});

t.test('G.711 echo-stream: the same format comes back byte for byte; another is converted, the duration kept', async (t) => {
  const p = await provider(t);
  const c = await client(t, p, 'echo-stream');
  const update = (input: string, output: string) =>
    c.send({
      type: 'session.update',
      session: { type: 'realtime', audio: { input: { format: { type: input } }, output: { format: { type: output } } } },
    });
  update('audio/pcma', 'audio/pcma');
  await c.next('session.updated');
  const alaw = g711Of('pcma', pcmTone(100));
  for (let off = 0; off < alaw.length; off += 160) c.append(alaw.subarray(off, off + 160));
  for (let off = 0; off < alaw.length; off += 160)
    t.equal((await c.next('response.output_audio.delta')).delta, alaw.subarray(off, off + 160).toString('base64'), `frame at ${off}`);
  c.send({ type: 'input_audio_buffer.commit' });
  const first = await c.until('response.done');
  t.equal(first.at(-1)!.response.usage.output_token_details.audio_tokens, 2, 'ceil(100 ms / 50)');

  update('audio/pcma', 'audio/pcm');
  await c.next('session.updated');
  for (let off = 0; off < alaw.length; off += 160) c.append(alaw.subarray(off, off + 160));
  c.send({ type: 'input_audio_buffer.commit' });
  const second = await c.until('response.done');
  t.equal(deltaBytes(second).length, 100 * 48, 'A-law in, PCM16 out: 100 ms');
  t.equal(second.at(-1)!.response.usage.input_token_details.audio_tokens, 1, 'ceil(100 ms / 100)');
});

t.test('server VAD: speech then 500 ms of silence ends the turn and the speech is played back', async (t) => {
  const p = await provider(t);
  const c = await client(t, p);
  const tone = pcmTone(1000);
  sendAll(c, Buffer.concat([pcmSilence(200), tone, pcmSilence(600)]));
  const evs = await c.until('response.done');
  t.same(
    types(evs).filter((x) => x !== 'response.output_audio.delta'),
    [
      'input_audio_buffer.speech_started',
      'input_audio_buffer.speech_stopped',
      'input_audio_buffer.committed',
      'conversation.item.added',
      'conversation.item.done',
      'response.created',
      'response.output_item.added',
      'conversation.item.added',
      'response.content_part.added',
      'response.output_audio_transcript.delta',
      'response.output_audio.done',
      'response.output_audio_transcript.done',
      'response.content_part.done',
      'response.output_item.done',
      'conversation.item.done',
      'response.done',
    ],
  );
  t.equal(evs[0]!.audio_start_ms, 200);
  t.equal(evs[1]!.audio_end_ms, 1200);
  const deltas = evs.filter((e) => e.type === 'response.output_audio.delta');
  t.equal(deltas.length, 10, '100 ms per delta');
  t.ok(deltaBytes(evs).equals(tone), 'the reply is exactly the speech segment');
  const done = evs[evs.length - 1]!;
  t.equal(done.response.status, 'completed');
  // committed input: 0..1700 ms (turn ends 500 ms after the speech) → 17 tokens; 1000 ms out → 20 tokens
  t.same(done.response.usage, {
    total_tokens: 37,
    input_tokens: 17,
    output_tokens: 20,
    input_token_details: {
      text_tokens: 0,
      audio_tokens: 17,
      image_tokens: 0,
      cached_tokens: 0,
      cached_tokens_details: { text_tokens: 0, audio_tokens: 0, image_tokens: 0 },
    },
    output_token_details: { text_tokens: 0, audio_tokens: 20 },
  });
  t.equal(done.response.id, evs.find((e) => e.type === 'response.created')!.response.id);
  t.equal(
    evs.find((e) => e.type === 'response.output_audio_transcript.delta')!.delta,
    'speech 1000 ms',
    'the echo is transcribed as its speech',
  );
  t.equal(deltas[0]!.response_id, done.response.id);
});

t.test('deterministic: the same audio in different frame sizes gives the same events', async (t) => {
  const p = await provider(t);
  const audio = Buffer.concat([pcmSilence(130), pcmTone(730, { frequencyHz: 300 }), pcmSilence(520), pcmTone(240), pcmSilence(510)]);
  const runs: Ev[][] = [];
  for (const frameMs of [20, 7, 100]) {
    const c = await client(t, p);
    sendAll(c, audio, frameMs);
    const firstTurn = await c.until('response.done');
    runs.push(content([...firstTurn, ...(await c.until('response.done'))]));
  }
  t.same(runs[1], runs[0]);
  t.same(runs[2], runs[0]);
  const c1 = await client(t, p);
  const c2 = await client(t, p);
  sendAll(c1, audio);
  sendAll(c2, audio);
  await c1.until('response.done');
  await c2.until('response.done');
  t.same(await c1.until('response.done'), await c2.until('response.done'), 'identical, event ids included');
});

t.test('session silence_duration_ms changes when a turn ends', async (t) => {
  const p = await provider(t);
  const c = await client(t, p);
  c.send({
    type: 'session.update',
    session: { type: 'realtime', audio: { input: { turn_detection: { type: 'server_vad', silence_duration_ms: 200 } } } },
  });
  await c.next('session.updated');
  sendAll(c, Buffer.concat([pcmTone(300), pcmSilence(200)]));
  const evs = await c.until('response.done');
  t.equal(evs.find((e) => e.type === 'input_audio_buffer.speech_stopped')!.audio_end_ms, 300);
  t.equal(evs[evs.length - 1]!.response.usage.input_tokens, 5, '500 ms committed');
});

t.test('turn detection off: commit, then response.create plays the committed audio verbatim', async (t) => {
  const p = await provider(t);
  const c = await client(t, p);
  c.send({ type: 'session.update', session: { type: 'realtime', audio: { input: { turn_detection: null } } } });
  await c.next('session.updated');
  const audio = Buffer.concat([pcmSilence(100), pcmTone(250), pcmSilence(700)]);
  sendAll(c, audio);
  c.send({ type: 'input_audio_buffer.commit' });
  const committed = await c.until('input_audio_buffer.committed');
  t.same(types(committed), ['input_audio_buffer.committed'], 'no VAD events');
  c.send({ type: 'response.create' });
  const evs = await c.until('response.done');
  t.ok(deltaBytes(evs).equals(audio));
  t.same(evs[evs.length - 1]!.response.usage.input_token_details.audio_tokens, 11, 'ceil(1050 / 100)');
  t.same(evs[evs.length - 1]!.response.usage.output_token_details.audio_tokens, 21, 'ceil(1050 / 50)');
});

t.test('response.create commits what is buffered and answers at once (server VAD: from the speech start)', async (t) => {
  const p = await provider(t);
  const c = await client(t, p);
  const tone = pcmTone(400);
  sendAll(c, Buffer.concat([pcmSilence(300), tone]));
  await c.next('input_audio_buffer.speech_started');
  c.send({ type: 'response.create' });
  const evs = await c.until('response.done');
  t.same(types(evs).slice(0, 4), ['input_audio_buffer.committed', 'conversation.item.added', 'conversation.item.done', 'response.created']);
  t.ok(deltaBytes(evs).equals(tone), 'silence before the speech is not echoed');
  t.equal(evs[evs.length - 1]!.response.usage.input_tokens, 7, 'all 700 ms of input count');

  c.send({ type: 'response.create' });
  const empty = await c.until('response.done');
  t.equal(deltaBytes(empty).length, 0, 'nothing buffered: an empty reply');
  // The whole context is billed again: the user item (7) repeats the previous response's input (cached),
  // the assistant's 400 ms of audio is new input (4).
  t.match(empty[empty.length - 1]!.response.usage, {
    total_tokens: 11,
    input_tokens: 11,
    input_token_details: { audio_tokens: 11, cached_tokens: 7, cached_tokens_details: { audio_tokens: 7 } },
  });
});

t.test('response.cancel stops the reply; truncate cuts the item at what was played', async (t) => {
  // A reply paced one delta a minute: the cancel lands after exactly one delta, deterministically.
  const p = await provider(t, { replyChunkIntervalMs: 60_000 });
  const c = await client(t, p);
  c.send({ type: 'session.update', session: { type: 'realtime', audio: { input: { turn_detection: null } } } });
  await c.next('session.updated');
  sendAll(c, pcmTone(1000));
  c.send({ type: 'response.create' });
  const first = await c.next('response.output_audio.delta');
  c.send({ type: 'response.cancel' });
  const evs = await c.until('response.done');
  t.same(types(evs), ['response.output_item.done', 'conversation.item.done', 'response.done'], 'no more audio, no audio.done');
  const done = evs[2]!;
  t.equal(done.response.status, 'cancelled');
  t.same(done.response.status_details, { type: 'cancelled', reason: 'client_cancelled' });
  t.equal(done.response.usage.output_token_details.audio_tokens, 2, '100 ms sent → 2 tokens');

  c.send({ type: 'conversation.item.truncate', event_id: 'tr1', item_id: first.item_id, content_index: 0, audio_end_ms: 150 });
  t.equal((await c.next('error')).error.code, 'invalid_value', 'beyond what was sent');
  c.send({ type: 'conversation.item.truncate', item_id: first.item_id, content_index: 0, audio_end_ms: 40 });
  t.same(content([await c.next('conversation.item.truncated')]), [
    { type: 'conversation.item.truncated', item_id: first.item_id, content_index: 0, audio_end_ms: 40 },
  ]);
  c.send({ type: 'conversation.item.truncate', item_id: 'item_404', content_index: 0, audio_end_ms: 0 });
  t.equal((await c.next('error')).error.code, 'item_not_found');

  c.send({ type: 'response.cancel' });
  t.equal((await c.next('error')).error.code, 'response_cancel_not_active');
});

t.test('speech during a reply interrupts it (server VAD)', async (t) => {
  const p = await provider(t, { replyChunkIntervalMs: 60_000 });
  const c = await client(t, p);
  sendAll(c, Buffer.concat([pcmTone(500), pcmSilence(500)]));
  await c.next('response.output_audio.delta');
  sendAll(c, pcmTone(100));
  const evs = await c.until('response.done');
  t.same(types(evs), ['input_audio_buffer.speech_started', 'response.output_item.done', 'conversation.item.done', 'response.done']);
  t.same(evs[3]!.response.status_details, { type: 'cancelled', reason: 'turn_detected' });
});

t.test('echo-stream: every appended frame comes straight back as one delta, no VAD', async (t) => {
  const p = await provider(t);
  const c = await client(t, p, 'echo-stream');
  const frames = pcmFrames(Buffer.concat([pcmTone(60), pcmSilence(600), pcmTone(40)]), 20);
  for (const f of frames) c.append(f);
  const first = await c.until('response.output_audio.delta');
  t.same(types(first), ['response.created', 'response.output_item.added', 'response.output_audio.delta']);
  for (let i = 1; i < frames.length; i++) {
    const d = await c.next('response.output_audio.delta');
    t.equal(d.delta, frames[i]!.toString('base64'));
  }
  c.send({ type: 'input_audio_buffer.commit' });
  const end = await c.until('response.done');
  t.same(types(end), ['input_audio_buffer.committed', 'response.output_audio.done', 'response.output_item.done', 'response.done']);
  t.same(end[3]!.response.usage.input_token_details.audio_tokens, 7, 'ceil(700 / 100)');
  t.same(end[3]!.response.usage.output_token_details.audio_tokens, 14, 'ceil(700 / 50)');
  t.notOk(
    c.events.some((e) => e.type.startsWith('input_audio_buffer.speech')),
    'no VAD events',
  );
});

t.test('errors: empty commit, unknown event, invalid JSON; the socket stays open', async (t) => {
  const seen: ReceivedClientEvent[] = [];
  const p = await provider(t, { onClientEvent: (e) => seen.push(e) });
  const c = await client(t, p, 'echo-9');
  c.send({ type: 'input_audio_buffer.commit', event_id: 'c1' });
  t.same((await c.next('error')).error, {
    type: 'invalid_request_error',
    code: 'input_audio_buffer_commit_empty',
    message: 'The input audio buffer is empty.',
    param: null,
    event_id: 'c1',
  });
  c.send({ type: 'session.delete' });
  t.equal((await c.next('error')).error.code, 'invalid_event');
  c.ws.send('{nope');
  t.equal((await c.next('error')).error.code, 'invalid_json');
  c.send({ type: 'input_audio_buffer.clear' });
  await c.next('input_audio_buffer.cleared');
  t.same(
    seen.map((s) => [s.connection, s.model, s.event.type]),
    [
      [1, 'echo-9', 'input_audio_buffer.commit'],
      [1, 'echo-9', 'input_audio_buffer.clear'],
    ],
  );
});

t.test('clear drops the buffered audio: a later commit plays only what came after', async (t) => {
  const p = await provider(t);
  const c = await client(t, p);
  c.send({ type: 'session.update', session: { type: 'realtime', audio: { input: { turn_detection: null } } } });
  await c.next('session.updated');
  sendAll(c, pcmTone(200, { frequencyHz: 300 }));
  c.send({ type: 'input_audio_buffer.clear' });
  const after = pcmTone(100);
  sendAll(c, after);
  c.send({ type: 'response.create' });
  const evs = await c.until('response.done');
  t.ok(deltaBytes(evs).equals(after));
  t.equal(evs[evs.length - 1]!.response.usage.input_tokens, 1);
});

t.test('terminateConnections drops clients without a close frame; close() ends the server', async (t) => {
  const p = await startLocalProvider({ port: 0 });
  const c = await TestClient.connect(p.url, 'echo-1');
  await c.next('session.created');
  t.equal(p.connections(), 1);
  const closed = new Promise<number>((resolve) => c.ws.once('close', (code) => resolve(code)));
  p.terminateConnections();
  t.equal(await closed, 1006, 'abnormal closure');
  const c2 = await TestClient.connect(p.url, 'echo-1');
  const closed2 = new Promise<number>((resolve) => c2.ws.once('close', (code) => resolve(code)));
  await p.close();
  t.equal(await closed2, 1001);
  await t.rejects(TestClient.connect(p.url, 'echo-1'), 'no longer listening');
});

t.test("the current OpenAI session fields: accepted in the openai package's terms, echoed, reasoning honoured", async (t) => {
  const p = await provider(t);
  const c = await client(t, p);
  const session = {
    type: 'realtime',
    output_modalities: ['text'],
    reasoning: { effort: 'medium' },
    truncation: { type: 'retention_ratio', retention_ratio: 0.5 },
    parallel_tool_calls: false,
    include: ['item.input_audio_transcription.logprobs'],
  } satisfies RealtimeSessionCreateRequest;
  c.send({ type: 'session.update', session });
  const updated = await c.next('session.updated');
  t.match(updated.session, {
    reasoning: session.reasoning,
    truncation: session.truncation,
    parallel_tool_calls: false,
    include: session.include,
  });
  c.send({ type: 'conversation.item.create', item: { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'hi' }] } });
  c.send({ type: 'response.create' });
  const done = await c.next('response.output_text.done');
  t.equal(done.text, '(medium effort) hi');
});
