import fc from 'fast-check';
import t from 'tap';
import { InputAudioBufferAppendEvent, REALTIME_ERROR_TYPE, ServerEvent } from '@s2s/contract';
import { Audio } from '../src/audio.js';
import { decodePcmFrame } from '../src/codecs/pcm-frame.js';
import { isAppendShape, isRefusal, parseControlEvent, serverEvents, SvcRealtimeV1Codec } from '../src/codecs/svc-realtime-v1/codec.js';
import { AudioDeltaHeads } from '../src/hot/audio-delta.js';
import { EventIds } from '../src/hot/event-ids.js';
import type { InternalServerEvent } from '../src/codecs/events.js';

t.test('decodePcmFrame accepts raw aligned PCM16LE and nothing else', async (t) => {
  const pcm = Buffer.from([1, 0, 2, 0, 3, 0, 4, 0]);
  const ok = decodePcmFrame(pcm.toString('base64'));
  t.ok(ok instanceof Audio);
  t.same([...(ok as Audio).pcm], [...pcm]);
  t.equal((ok as Audio).base64, pcm.toString('base64'), 'the client text is carried as is');

  t.equal(decodePcmFrame(Buffer.from([1, 2, 3]).toString('base64')), 'odd_length');
  t.equal(decodePcmFrame(''), 'empty');
  for (const junk of ['AQID!A==', 'AQ ID', 'AQIDBA', 'AQIDBA=', 'AQ==AQ==', '-_8A', 'AQIDBA==\n', '====', 'A===', 'AA=A', '=AAA']) {
    t.equal(decodePcmFrame(junk), 'not_base64', JSON.stringify(junk));
  }
  const wav = Buffer.alloc(44);
  wav.write('RIFF', 0, 'ascii');
  wav.writeUInt32LE(36 + 960, 4);
  wav.write('WAVEfmt ', 8, 'ascii');
  t.equal(decodePcmFrame(wav.toString('base64')), 'wav_header');
  const riffOnly = Buffer.alloc(12, 0);
  riffOnly.write('RIFF', 0, 'ascii');
  t.ok(decodePcmFrame(riffOnly.toString('base64')) instanceof Audio, 'RIFF without WAVE is just samples');
});

t.test('decodePcmFrame rejects exactly what strict RFC 4648 base64 rejects', async () => {
  const strict = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;
  const ch = fc.constantFrom(...'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=-_ \n*.\u00e9\u0000'.split(''));
  const mutated = fc.tuple(fc.uint8Array({ minLength: 1, maxLength: 40 }), fc.nat(80), ch).map(([bytes, i, c]) => {
    const s = Buffer.from(bytes).toString('base64');
    const k = i % (s.length + 1);
    return s.slice(0, k) + c + s.slice(k + 1);
  });
  const text = fc.oneof(
    fc.array(ch, { minLength: 1, maxLength: 16 }).map((a) => a.join('')),
    mutated,
  );
  fc.assert(
    fc.property(text, (s) => (decodePcmFrame(s) !== 'not_base64') === strict.test(s)),
    { numRuns: 20_000 },
  );
});

t.test('decodePcmFrame round-trips any even-length buffer', async (t) => {
  fc.assert(
    fc.property(fc.uint8Array({ minLength: 1, maxLength: 400 }), (bytes) => {
      const b = Buffer.from(bytes.length % 2 ? bytes.subarray(1) : bytes);
      if (b.length === 0 || (b.length >= 12 && b.toString('latin1', 0, 4) === 'RIFF' && b.toString('latin1', 8, 12) === 'WAVE')) return;
      const r = decodePcmFrame(b.toString('base64'));
      return r instanceof Audio && r.bytes === b.length && r.pcm.equals(b);
    }),
  );
});

t.test('isAppendShape is InputAudioBufferAppendEvent.safeParse', async (t) => {
  const value = fc.oneof(
    fc.string({ maxLength: 3 }),
    fc.integer(),
    fc.constant(null),
    fc.boolean(),
    fc.constant(undefined),
    fc.string({ minLength: 120, maxLength: 140 }),
    fc.constant(''),
  );
  const key = fc.constantFrom('type', 'event_id', 'audio', 'extra', '__proto__', 'Audio');
  fc.assert(
    fc.property(fc.dictionary(key, value), fc.boolean(), (obj, withAudio) => {
      const msg: Record<string, unknown> = JSON.parse(
        JSON.stringify({ ...obj, type: 'input_audio_buffer.append', ...(withAudio ? { audio: 'AAAA' } : {}) }),
      );
      return isAppendShape(msg) === InputAudioBufferAppendEvent.safeParse(msg).success;
    }),
    { numRuns: 2000 },
  );
  t.ok(isAppendShape(JSON.parse('{"type":"input_audio_buffer.append","audio":"AAAA","event_id":"e1"}')));
  t.notOk(isAppendShape(JSON.parse('{"type":"input_audio_buffer.append","audio":"AAAA","__proto__":{}}')));
  t.notOk(isAppendShape(JSON.parse('{"type":"input_audio_buffer.append","audio":"AAAA","event_id":""}')));
});

t.test('parseControlEvent: invalid_event, invalid_audio_format, or the event', async (t) => {
  const unknown = parseControlEvent({ type: 'conversation.item.create', event_id: 'e1' });
  t.ok(isRefusal(unknown));
  t.match(unknown, { code: 'invalid_event', eventId: 'e1', wireParam: 'item' });
  t.match(parseControlEvent([1, 2]), { code: 'invalid_event', eventId: undefined });
  t.match(parseControlEvent({ type: 'input_audio_buffer.commit', extra: 1, event_id: 'e2' }), { code: 'invalid_event', eventId: 'e2' });
  const badFormat = parseControlEvent({
    type: 'session.update',
    event_id: 'e3',
    session: { audio: { input: { format: { type: 'audio/pcm', encoding: 'pcm16le', sample_rate_hz: 16000, channels: 1 } } } },
  });
  t.match(badFormat, { code: 'invalid_audio_format', eventId: 'e3', wireParam: 'session.audio.input.format' });
  t.match(parseControlEvent({ type: 'session.update', session: { audio: { output: { format: { type: 'audio/wav' } } } } }), {
    code: 'invalid_audio_format',
  });
  const good = parseControlEvent({
    type: 'session.update',
    session: {
      voice: 'alloy',
      turn_detection: { type: 'server_vad' },
      audio: { input: { format: { type: 'audio/pcm', encoding: 'pcm16le', sample_rate_hz: 24000, channels: 1 } } },
    },
  });
  t.notOk(isRefusal(good));
  t.same(parseControlEvent({ type: 'response.cancel' }), { type: 'response.cancel' });
});

t.test('server events are exact JSON', async (t) => {
  const ids = new EventIds();
  const a = ids.next();
  const b = ids.next();
  t.not(a, b);
  t.match(a, /^evt_[0-9A-Za-z]{10}[0-9a-z]+$/);
  const pcm = Buffer.from([1, 2, 3, 4]);
  const head = new AudioDeltaHeads().of({ responseId: 'resp_x', itemId: 'item_a', outputIndex: 1, contentIndex: 0 });
  t.same(JSON.parse(serverEvents.audioDelta('evt_1', head, Audio.ofPcm(pcm)).toString()), {
    type: 'response.output_audio.delta',
    event_id: 'evt_1',
    response_id: 'resp_x',
    item_id: 'item_a',
    output_index: 1,
    content_index: 0,
    audio: pcm.toString('base64'),
  });
  t.same(JSON.parse(serverEvents.error('evt_2', 'invalid_event', 'm', 'c1')), {
    type: 'error',
    event_id: 'evt_2',
    error: { type: 'invalid_request_error', code: 'invalid_event', message: 'm', event_id: 'c1' },
  });
  t.same(JSON.parse(serverEvents.error('evt_3', 'budget_exhausted', 'm')).error, {
    type: 'billing_error',
    code: 'budget_exhausted',
    message: 'm',
  });
});

const codec = () => new SvcRealtimeV1Codec();
const text = (v: unknown) => Buffer.from(typeof v === 'string' ? v : JSON.stringify(v));

t.test('svc-realtime-v1 decode: each client event into the internal model', async (t) => {
  const c = codec();
  const pcm = Buffer.from([1, 0, 2, 0]);
  const append = c.decode(text({ type: 'input_audio_buffer.append', audio: pcm.toString('base64'), event_id: 'a1' }), false);
  t.equal(append.type, 'audio.append');
  t.ok(append.type === 'audio.append' && append.audio.pcm.equals(pcm) && append.audio.bytes === 4);
  t.equal(append.eventId, 'a1');
  t.same(c.decode(text({ type: 'input_audio_buffer.commit', event_id: 'c1' }), false), { type: 'input.commit', eventId: 'c1' });
  t.same(c.decode(text({ type: 'input_audio_buffer.clear' }), false), { type: 'input.clear', eventId: undefined });
  t.same(c.decode(text({ type: 'response.create' }), false), { type: 'response.create', eventId: undefined, options: undefined });
  t.same(c.decode(text({ type: 'response.cancel', event_id: 'x' }), false), { type: 'response.cancel', eventId: 'x' });
  t.same(
    c.decode(
      text({
        type: 'session.update',
        event_id: 'u',
        session: { voice: 'alloy', turn_detection: { type: 'server_vad', silence_duration_ms: 300 } },
      }),
      false,
    ),
    { type: 'session.update', eventId: 'u', update: { voice: 'alloy', turnDetection: { type: 'server_vad', silenceDurationMs: 300 } } },
  );
  t.same(c.decode(text({ type: 'session.update', session: {} }), false), { type: 'session.update', eventId: undefined, update: {} });
});

t.test('svc-realtime-v1 decode: refusals carry a documented code and the valid event_id', async (t) => {
  const c = codec();
  t.match(c.decode(text('{"type":'), false), { type: 'refusal', code: 'invalid_event', eventId: undefined });
  t.match(c.decode(text({ type: 'response.create' }), true), { type: 'refusal', code: 'invalid_event' });
  t.match(c.decode(text({ type: 'nope', event_id: 'n1' }), false), { type: 'refusal', code: 'invalid_event', eventId: 'n1' });
  t.match(c.decode(text({ type: 'input_audio_buffer.append', audio: 'AQID', event_id: 'o' }), false), {
    type: 'refusal',
    code: 'invalid_audio_format',
    eventId: 'o',
  });
  t.match(c.decode(text({ type: 'input_audio_buffer.append', audio: 1, event_id: 'p' }), false), {
    type: 'refusal',
    code: 'invalid_event',
    eventId: 'p',
  });
  t.match(c.decode(text({ type: 'input_audio_buffer.commit', event_id: 'x'.repeat(129) }), false), {
    type: 'refusal',
    code: 'invalid_event',
    eventId: undefined,
  });
  t.match(c.decode(text('null'), false), { type: 'refusal', code: 'invalid_event' });
});

t.test('svc-realtime-v1 decode never throws and answers only documented codes', async () => {
  const c = codec();
  const anyJson = fc.oneof(
    fc.jsonValue().map((v) => JSON.stringify(v)),
    fc
      .record({
        type: fc.constantFrom('input_audio_buffer.append', 'session.update', 'response.cancel', 'x'),
        event_id: fc.anything(),
        audio: fc.string(),
        session: fc.jsonValue(),
      })
      .map((v) => JSON.stringify(v)),
    fc.string(),
  );
  fc.assert(
    fc.property(anyJson, fc.boolean(), (s, binary) => {
      const r = c.decode(Buffer.from(s), binary);
      if (r.type !== 'refusal') return !binary;
      return (
        (r.code === 'invalid_event' || r.code === 'invalid_audio_format') &&
        (r.eventId === undefined || (r.eventId.length >= 1 && r.eventId.length <= 128))
      );
    }),
    { numRuns: 3000 },
  );
});

const place = { responseId: 'resp_1', itemId: 'item_1', outputIndex: 0, contentIndex: 0 };

t.test('svc-realtime-v1 encode: every internal server event is a valid ServerEvent', async (t) => {
  const c = codec();
  const events: InternalServerEvent[] = [
    { type: 'conversation.created', conversationId: 'conv_1' },
    { type: 'speech.started', audioStartMs: 12.4 },
    { type: 'speech.stopped', audioEndMs: -3 },
    { type: 'response.created', responseId: 'resp_1' },
    { type: 'response.audio.delta', place, audio: Audio.ofPcm(Buffer.from([1, 2])) },
    { type: 'response.audio.delta', place: { ...place, responseId: 'resp_"2' }, audio: Audio.ofPcm(Buffer.from([3, 4])) },
    { type: 'response.audio.done', ...place },
    {
      type: 'response.done',
      responseId: 'resp_1',
      status: 'cancelled',
      usage: {
        audio_in_ms: 1,
        audio_out_ms: 2,
        input_audio_tokens: 3,
        input_text_tokens: 5,
        cached_input_tokens: 6,
        output_audio_tokens: 4,
        output_text_tokens: 7,
        transcribed_ms: 8,
      },
    },
    { type: 'error', code: 'input_audio_buffer_commit_empty', message: 'm', clientEventId: 'c1' },
    { type: 'error', code: 'response_cancel_not_active', message: 'm' },
  ];
  const seen = new Set<string>();
  for (const e of events) {
    const json = JSON.parse(c.encode(e).toString());
    const parsed = ServerEvent.safeParse(json);
    t.ok(parsed.success, `${e.type}: ${parsed.success ? '' : parsed.error.message}`);
    t.notOk(seen.has(json.event_id), 'fresh event id');
    seen.add(json.event_id);
  }
  const done = JSON.parse(c.encode(events[7] as InternalServerEvent).toString());
  t.same(
    done.response.usage,
    (events[7] as Extract<InternalServerEvent, { type: 'response.done' }>).usage,
    'response.done carries every usage counter',
  );
  const delta = JSON.parse(c.encode(events[5] as InternalServerEvent).toString());
  t.equal(delta.response_id, 'resp_"2', 'the quoted id follows the response');
  t.equal(JSON.parse(c.encode(events[1] as InternalServerEvent).toString()).audio_start_ms, 12);
  t.equal(JSON.parse(c.encode(events[2] as InternalServerEvent).toString()).audio_end_ms, 0);
  const err = JSON.parse(c.encode(events[8] as InternalServerEvent).toString());
  t.same(err.error, {
    type: REALTIME_ERROR_TYPE.input_audio_buffer_commit_empty,
    code: 'input_audio_buffer_commit_empty',
    message: 'm',
    event_id: 'c1',
  });
  t.equal(c.protocol, 'svc-realtime-v1');
});
