import fc from 'fast-check';
import t from 'tap';
import { InputAudioBufferAppendEvent } from '@s2s/contract';
import { billedCents, ZERO_USAGE, type Usage } from '@s2s/core';
import { decodePcmFrame } from '../src/domain/audio.js';
import { Budget } from '../src/domain/budget.js';
import { EventIds, isAppendShape, isRejection, parseControlEvent, serverEvents } from '../src/domain/events.js';
import { isNewerAttachment } from '@s2s/core';

t.test('decodePcmFrame accepts raw aligned PCM16LE and nothing else', async (t) => {
  const pcm = Buffer.from([1, 0, 2, 0, 3, 0, 4, 0]);
  const ok = decodePcmFrame(pcm.toString('base64'));
  t.ok(Buffer.isBuffer(ok));
  t.same([...(ok as Buffer)], [...pcm]);

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
  t.ok(Buffer.isBuffer(decodePcmFrame(riffOnly.toString('base64'))), 'RIFF without WAVE is just samples');
});

t.test('decodePcmFrame rejects exactly what strict RFC 4648 base64 rejects', async () => {
  const strict = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;
  const ch = fc.constantFrom(...'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=-_ \n*.\u00e9\u0000'.split(''));
  const mutated = fc
    .tuple(fc.uint8Array({ minLength: 1, maxLength: 40 }), fc.nat(80), ch)
    .map(([bytes, i, c]) => {
      const s = Buffer.from(bytes).toString('base64');
      const k = i % (s.length + 1);
      return s.slice(0, k) + c + s.slice(k + 1);
    });
  const text = fc.oneof(fc.array(ch, { minLength: 1, maxLength: 16 }).map((a) => a.join('')), mutated);
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
      return Buffer.isBuffer(r) && r.equals(b);
    }),
  );
});

t.test('isAppendShape is InputAudioBufferAppendEvent.safeParse', async (t) => {
  const value = fc.oneof(fc.string({ maxLength: 3 }), fc.integer(), fc.constant(null), fc.boolean(), fc.constant(undefined), fc.string({ minLength: 120, maxLength: 140 }), fc.constant(''));
  const key = fc.constantFrom('type', 'event_id', 'audio', 'extra', '__proto__', 'Audio');
  fc.assert(
    fc.property(fc.dictionary(key, value), fc.boolean(), (obj, withAudio) => {
      const msg: Record<string, unknown> = JSON.parse(JSON.stringify({ ...obj, type: 'input_audio_buffer.append', ...(withAudio ? { audio: 'AAAA' } : {}) }));
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
  t.ok(isRejection(unknown));
  t.match(unknown, { code: 'invalid_event', eventId: 'e1' });
  t.match(parseControlEvent([1, 2]), { code: 'invalid_event', eventId: undefined });
  t.match(parseControlEvent({ type: 'input_audio_buffer.commit', extra: 1, event_id: 'e2' }), { code: 'invalid_event', eventId: 'e2' });
  const badFormat = parseControlEvent({
    type: 'session.update',
    event_id: 'e3',
    session: { audio: { input: { format: { type: 'audio/pcm', encoding: 'pcm16le', sample_rate_hz: 16000, channels: 1 } } } },
  });
  t.match(badFormat, { code: 'invalid_audio_format', eventId: 'e3' });
  t.match(
    parseControlEvent({ type: 'session.update', session: { audio: { output: { format: { type: 'audio/wav' } } } } }),
    { code: 'invalid_audio_format' },
  );
  const good = parseControlEvent({
    type: 'session.update',
    session: {
      voice: 'alloy',
      turn_detection: { type: 'server_vad' },
      audio: { input: { format: { type: 'audio/pcm', encoding: 'pcm16le', sample_rate_hz: 24000, channels: 1 } } },
    },
  });
  t.notOk(isRejection(good));
  t.same(parseControlEvent({ type: 'response.cancel' }), { type: 'response.cancel' });
});

t.test('server events are exact JSON', async (t) => {
  const ids = new EventIds();
  const a = ids.next();
  const b = ids.next();
  t.not(a, b);
  t.match(a, /^evt_[0-9A-Za-z]{10}[0-9a-z]+$/);
  const pcm = Buffer.from([1, 2, 3, 4]);
  t.same(JSON.parse(serverEvents.audioDelta('evt_1', JSON.stringify('resp_x'), pcm).toString()), {
    type: 'response.output_audio.delta',
    event_id: 'evt_1',
    response_id: 'resp_x',
    audio: pcm.toString('base64'),
  });
  t.same(JSON.parse(serverEvents.error('evt_2', 'invalid_event', 'm', 'c1')), {
    type: 'error',
    event_id: 'evt_2',
    error: { type: 'invalid_request_error', code: 'invalid_event', message: 'm', event_id: 'c1' },
  });
  t.same(JSON.parse(serverEvents.error('evt_3', 'budget_exhausted', 'm')).error, { type: 'billing_error', code: 'budget_exhausted', message: 'm' });
});

t.test('Budget agrees with billedCents', async (t) => {
  const usage = fc.record({
    audio_in_ms: fc.integer({ min: 0, max: 4_000_000 }),
    audio_out_ms: fc.integer({ min: 0, max: 4_000_000 }),
    input_audio_tokens: fc.integer({ min: 0, max: 100_000 }),
    output_audio_tokens: fc.integer({ min: 0, max: 100_000 }),
  });
  const rate = fc.record({
    per_minute: fc.integer({ min: 0, max: 200_000 }),
    audio_in_token: fc.integer({ min: 0, max: 5_000 }),
    audio_out_token: fc.integer({ min: 0, max: 5_000 }),
    relay_fee_milli_cents: fc.integer({ min: 0, max: 100_000 }),
  });
  fc.assert(
    fc.property(rate, usage, usage, fc.integer({ min: 1, max: 100_000 }), fc.integer({ min: 0, max: 100 }), (r, prior, u, preauth, extra) => {
      const total: Usage = {
        audio_in_ms: prior.audio_in_ms + u.audio_in_ms + extra,
        audio_out_ms: prior.audio_out_ms + u.audio_out_ms,
        input_audio_tokens: prior.input_audio_tokens + u.input_audio_tokens,
        output_audio_tokens: prior.output_audio_tokens + u.output_audio_tokens,
      };
      const cents = billedCents(r, total);
      const expected = cents < preauth ? 'under' : cents === preauth ? 'reached' : 'over';
      return new Budget(r, preauth, prior).check(u, extra) === expected;
    }),
    { numRuns: 5000 },
  );
  // At the boundary: 1 cent per 600 ms of audio at per_minute = 100 milli-cents... 100 cents/minute.
  const b = new Budget({ per_minute: 100_000, audio_in_token: 0, audio_out_token: 0, relay_fee_milli_cents: 0 }, 10, ZERO_USAGE);
  t.equal(b.check({ ...ZERO_USAGE, audio_in_ms: 5400 }), 'under');
  t.equal(b.check({ ...ZERO_USAGE, audio_in_ms: 5401 }), 'reached');
  t.equal(b.check({ ...ZERO_USAGE, audio_in_ms: 6000 }), 'reached');
  t.equal(b.check({ ...ZERO_USAGE, audio_in_ms: 6000 }, 1), 'over');
});

t.test('attachment order: started_at, then id as COLLATE "C"', async (t) => {
  t.ok(isNewerAttachment({ startedAtMs: 2, id: 'a' }, { startedAtMs: 1, id: 'z' }));
  t.ok(isNewerAttachment({ startedAtMs: 1, id: 'att_b' }, { startedAtMs: 1, id: 'att_B' }));
  t.notOk(isNewerAttachment({ startedAtMs: 1, id: 'att_B' }, { startedAtMs: 1, id: 'att_b' }));
});
