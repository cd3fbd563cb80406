import t from 'tap';
import { ErrorEvent } from '@s2s/contract';
import { attach, attachUrl, createKey, createModel, eventually, newSession, sessionRow, setupRelay, tone } from './helpers.js';

t.test('every invalid frame answers its error, is dropped and never billed, and the socket stays open', async (t) => {
  const env = await setupRelay(t);
  const { db } = env;
  await createModel(db, { id: 'local/echo', providerModel: 'echo-stream' });
  const key = await createKey(db, 10_000);
  const s = await newSession(db, key, 'local/echo');
  const { client } = await attach(attachUrl(env.url, s.id), key.secret);

  const wav = Buffer.concat([Buffer.from('RIFF'), Buffer.alloc(4), Buffer.from('WAVEfmt '), Buffer.alloc(952)]);
  const cases: { name: string; send: unknown; code: string; eventId?: string }[] = [
    {
      name: 'WAV header',
      send: { type: 'input_audio_buffer.append', event_id: 'c1', audio: wav.toString('base64') },
      code: 'invalid_audio_format',
      eventId: 'c1',
    },
    {
      name: 'odd byte count',
      send: { type: 'input_audio_buffer.append', event_id: 'c2', audio: Buffer.alloc(961).toString('base64') },
      code: 'invalid_audio_format',
      eventId: 'c2',
    },
    {
      name: 'not base64',
      send: { type: 'input_audio_buffer.append', event_id: 'c3', audio: 'this is not base64!!' },
      code: 'invalid_audio_format',
      eventId: 'c3',
    },
    {
      name: 'base64 with junk',
      send: {
        type: 'input_audio_buffer.append',
        event_id: 'c4',
        audio: `${tone(20).toString('base64').slice(0, 100)}*${tone(20).toString('base64').slice(101)}`,
      },
      code: 'invalid_audio_format',
      eventId: 'c4',
    },
    { name: 'empty audio', send: { type: 'input_audio_buffer.append', audio: '' }, code: 'invalid_audio_format' },
    {
      name: 'wrong format in session.update',
      send: {
        type: 'session.update',
        event_id: 'c5',
        session: { audio: { input: { format: { type: 'audio/pcm', encoding: 'pcm16le', sample_rate_hz: 16000, channels: 1 } } } },
      },
      code: 'invalid_audio_format',
      eventId: 'c5',
    },
    { name: 'not JSON', send: '{"type": "input_audio_buffer.append", ', code: 'invalid_event' },
    { name: 'JSON but not an object', send: '[1,2,3]', code: 'invalid_event' },
    { name: 'unknown type', send: { type: 'conversation.item.create', event_id: 'c6' }, code: 'invalid_event', eventId: 'c6' },
    {
      name: 'append with a number as audio',
      send: { type: 'input_audio_buffer.append', event_id: 'c7', audio: 12 },
      code: 'invalid_event',
      eventId: 'c7',
    },
    {
      name: 'append with an extra field',
      send: { type: 'input_audio_buffer.append', event_id: 'c8', audio: 'AAAA', rate: 16000 },
      code: 'invalid_event',
      eventId: 'c8',
    },
    {
      name: 'commit with an extra field',
      send: { type: 'input_audio_buffer.commit', event_id: 'c9', x: 1 },
      code: 'invalid_event',
      eventId: 'c9',
    },
  ];
  for (const c of cases) {
    client.send(c.send);
    const e = await client.next('error');
    const parsed = ErrorEvent.safeParse(e);
    t.ok(parsed.success, `${c.name}: error event shape`);
    t.equal(parsed.data?.error.code, c.code, `${c.name}: code`);
    t.equal(parsed.data?.error.type, 'invalid_request_error', `${c.name}: type`);
    t.equal(parsed.data?.error.event_id, c.eventId, `${c.name}: event_id`);
  }
  client.ws.send(Buffer.from('{"type":"input_audio_buffer.commit"}'), { binary: true });
  const binary = await client.next('error');
  t.equal((binary.error as { code: string }).code, 'invalid_event', 'binary frame');

  t.equal(client.closeCode, null, 'still open');
  t.equal((await sessionRow(db, s.id))?.status, 'ready', 'a rejected frame does not activate the session');
  t.notOk(
    client.events.some((e) => e.type === 'response.output_audio.delta'),
    'nothing forwarded',
  );

  const good = tone(20);
  client.append(good, 'ok1');
  const delta = await client.next('response.output_audio.delta');
  t.equal(delta.audio, good.toString('base64'), 'a valid frame still flows');
  await client.close();
  const final = await eventually(
    () => env.checkpoints.find((c) => c.session_id === s.id && c.final),
    (c) => c !== undefined,
  );
  t.equal(final?.audio_in_ms, 20, 'only the valid frame is billed');
  t.equal(final?.audio_out_ms, 20);
});

t.test('an event over REALTIME_MAX_EVENT_BYTES closes with 1009', async (t) => {
  const env = await setupRelay(t, { REALTIME_MAX_EVENT_BYTES: '4096' });
  await createModel(env.db, { id: 'local/echo', providerModel: 'echo-stream' });
  const key = await createKey(env.db, 10_000);
  const s = await newSession(env.db, key, 'local/echo');
  const { client } = await attach(attachUrl(env.url, s.id), key.secret);
  client.append(tone(100)); // 4800 bytes of PCM, 6.4 KB as base64
  const closed = await client.closed;
  t.equal(closed.code, 1009);
  t.equal((await sessionRow(env.db, s.id))?.status, 'ready', 'the oversize frame was not accepted');
  const final = await eventually(
    () => env.checkpoints.find((c) => c.session_id === s.id && c.final),
    (c) => c !== undefined,
  );
  t.equal(final?.audio_in_ms, 0);
  t.equal((await sessionRow(env.db, s.id))?.end_requested_at, null, 'a dropped socket does not end the session');
});

t.test('more than 100 rejected events in 10 s closes with 1008', async (t) => {
  const env = await setupRelay(t);
  await createModel(env.db, { id: 'local/echo', providerModel: 'echo-stream' });
  const key = await createKey(env.db, 10_000);
  const s = await newSession(env.db, key, 'local/echo');
  const { client } = await attach(attachUrl(env.url, s.id), key.secret);
  for (let i = 0; i < 100; i++) client.send('nope');
  for (let i = 0; i < 100; i++) await client.next('error');
  t.equal(client.closeCode, null, '100 rejected events are tolerated');
  client.send('nope');
  const closed = await client.closed;
  t.equal(closed.code, 1008);
  t.equal(client.events.filter((e) => e.type === 'error').length, 101);
});
