// The audio fast paths (issue 13): frames carried through as base64 are validated exactly as the decoding
// path validated them, and metering counts exactly the bytes the decoding path counted.
import fc from 'fast-check';
import t from 'tap';
import { REFERENCE_TOKENS } from '@s2s/core';
import { Audio, checkBase64 } from '../src/audio.js';
import { decodePcmFrame, readCompactAppend, type AudioFrameProblem } from '../src/codecs/pcm-frame.js';
import { isAppendShape, SvcRealtimeV1Codec, validEventId } from '../src/codecs/svc-realtime-v1/codec.js';
import { UsageMeter } from '../src/providers/shared/base.js';

const STRICT = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/** The decoding path as it was before the fast path: decode, then check the bytes (the reference). */
function slowPcmFrame(audio: string): Buffer | AudioFrameProblem {
  if (audio.length === 0) return 'empty';
  if (!STRICT.test(audio)) return 'not_base64';
  const pcm = Buffer.from(audio, 'base64');
  if (pcm.length === 0) return 'empty';
  if (pcm.length % 2 !== 0) return 'odd_length';
  if (pcm.length >= 12 && pcm.toString('latin1', 0, 4) === 'RIFF' && pcm.toString('latin1', 8, 12) === 'WAVE') return 'wav_header';
  return pcm;
}

function sameVerdict(audio: string): boolean {
  const fast = decodePcmFrame(audio);
  const slow = slowPcmFrame(audio);
  if (typeof slow === 'string') return fast === slow;
  return fast instanceof Audio && fast.bytes === slow.length && fast.base64 === audio && fast.pcm.equals(slow);
}

const wavHeader = (dataBytes: number): Buffer => {
  const h = Buffer.alloc(44);
  h.write('RIFF', 0, 'ascii');
  h.writeUInt32LE(36 + dataBytes, 4);
  h.write('WAVEfmt ', 8, 'ascii');
  return h;
};

t.test('tricky base64 is refused without decoding, as the decoding path refused it', async (t) => {
  const good = Buffer.from([1, 0, 2, 0, 3, 0, 4, 0, 5, 0, 6, 0]).toString('base64'); // 16 chars, no padding
  const cases: [string, AudioFrameProblem | 'ok'][] = [
    [good, 'ok'],
    ['AQIDBA==', 'ok'], // 4 bytes, two pads
    ['AQI=', 'ok'], // 2 bytes, one pad
    ['AQ==', 'odd_length'], // 1 byte
    ['AQIDBAU=', 'odd_length'], // 5 bytes
    ['AQ==AQ==', 'not_base64'], // padding in the middle
    ['AQ=AAQ==', 'not_base64'],
    ['=AAA', 'not_base64'],
    ['A===', 'not_base64'],
    ['====', 'not_base64'],
    ['AAAA====', 'not_base64'],
    ['AQID BAUG', 'not_base64'], // whitespace inside
    [' AQIDBAUG', 'not_base64'],
    ['AQIDBAUG\n', 'not_base64'],
    ['AQIDBAUG\r\n', 'not_base64'],
    ['AQID\tBAU', 'not_base64'],
    ['-_8A', 'not_base64'], // URL-safe alphabet
    ['AQ-_AAAA', 'not_base64'],
    ['AQ_A', 'not_base64'],
    ['AQIDBA', 'not_base64'], // length not a multiple of 4
    ['AQIDBA=', 'not_base64'],
    ['AQIDB', 'not_base64'],
    ['A', 'not_base64'],
    ['AQID!A==', 'not_base64'],
    ['AQ\u00e9D', 'not_base64'],
    ['AQ\u0000D', 'not_base64'],
    ['AQ\\/D', 'not_base64'],
    ['', 'empty'],
    [wavHeader(960).toString('base64'), 'wav_header'],
    [Buffer.concat([wavHeader(960), Buffer.alloc(960)]).toString('base64'), 'wav_header'],
  ];
  for (const [audio, expected] of cases) {
    const slow = slowPcmFrame(audio);
    const fast = decodePcmFrame(audio);
    t.equal(typeof slow === 'string' ? slow : 'ok', expected, `${JSON.stringify(audio)}: the decoding path says ${expected}`);
    t.equal(typeof fast === 'string' ? fast : 'ok', expected, `${JSON.stringify(audio)}: so does the fast path`);
    t.ok(sameVerdict(audio), `${JSON.stringify(audio)}: same bytes when accepted`);
  }
  // A WAV header needs both RIFF and WAVE: "RIFF" alone, or "UklGR" of other bytes, is just samples.
  const riff = Buffer.alloc(16);
  riff.write('RIFF', 0, 'ascii');
  t.ok(decodePcmFrame(riff.toString('base64')) instanceof Audio);
  const almost = Buffer.from('RIFG\0\0\0\0WAVEfmt ', 'latin1');
  t.ok(almost.toString('base64').startsWith('UklGR'), '"RIFG" still starts with UklGR');
  t.ok(decodePcmFrame(almost.toString('base64')) instanceof Audio, 'but is not a WAV header');
  const wave12 = Buffer.from('RIFF\0\0\0\0WAVE', 'latin1');
  t.equal(decodePcmFrame(wave12.toString('base64')), 'wav_header', 'a 12-byte header alone');
  t.equal(slowPcmFrame(wave12.toString('base64')), 'wav_header');
});

t.test('decodePcmFrame gives the decoding path verdict on generated text (property)', async () => {
  const ch = fc.constantFrom(...'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=-_ \t\r\n*.\\"\u00e9\u0000'.split(''));
  const bytes = fc.oneof(
    fc.uint8Array({ minLength: 0, maxLength: 64 }),
    fc.uint8Array({ minLength: 0, maxLength: 64 }).map((b) => Buffer.concat([wavHeader(b.length), b])),
    fc.uint8Array({ minLength: 900, maxLength: 1000 }),
  );
  const valid = bytes.map((b) => Buffer.from(b).toString('base64'));
  const mutated = fc.tuple(valid, fc.nat(2000), ch, fc.boolean()).map(([s, i, c, insert]) => {
    const k = i % (s.length + 1);
    return s.slice(0, k) + c + s.slice(insert ? k : k + 1);
  });
  const junk = fc.array(ch, { minLength: 0, maxLength: 24 }).map((a) => a.join(''));
  fc.assert(fc.property(fc.oneof(valid, mutated, junk), sameVerdict), { numRuns: 20_000 });
});

t.test('checkBase64 counts the bytes of strict base64 and refuses the rest, large frames included', async (t) => {
  fc.assert(
    fc.property(fc.uint8Array({ minLength: 0, maxLength: 300 }), (b) => checkBase64(Buffer.from(b).toString('base64')) === b.length),
  );
  const big = Buffer.alloc(100_000, 7).toString('base64'); // past the scratch buffer
  t.equal(checkBase64(big), 100_000);
  t.equal(checkBase64(big.slice(0, -4) + 'AA-A'), -1);
  t.equal(checkBase64(big.slice(0, 40) + ' ' + big.slice(41)), -1);
});

t.test('a provider delta: strict base64 carried as is, anything else decoded as Buffer.from decodes it', async (t) => {
  const pcm = Buffer.from([1, 2, 3, 4, 5, 6]);
  const carried = Audio.ofProviderBase64(pcm.toString('base64'));
  t.equal(carried.bytes, 6);
  t.equal(carried.base64, pcm.toString('base64'));
  for (const odd of ['AQID\nBAUG', 'AQ-_', 'AQIDBA', ' AQIDBAUG ', 'AQ==AQ==']) {
    const a = Audio.ofProviderBase64(odd);
    const ref = Buffer.from(odd, 'base64');
    t.equal(a.bytes, ref.length, `${JSON.stringify(odd)}: metered as decoded`);
    t.equal(a.base64, ref.toString('base64'), 'sent on as strict base64 of those bytes');
  }
});

type Step =
  | { kind: 'append'; bytes: Uint8Array; mutate: number }
  | { kind: 'delta'; bytes: Uint8Array; mutate: number }
  | { kind: 'done'; reported: boolean };

const MUTATIONS = ['', ' ', '\n', '-', '_', '=', '!', 'A'];

function mutate(s: string, m: number): string {
  if (m === 0 || s.length === 0) return s;
  const c = MUTATIONS[m % MUTATIONS.length] as string;
  const k = (m * 7) % s.length;
  return s.slice(0, k) + c + s.slice(k);
}

t.test('metering through the fast paths equals metering through the decoding path (property)', async () => {
  const bytes = fc.uint8Array({ minLength: 0, maxLength: 2000 });
  const step: fc.Arbitrary<Step> = fc.oneof(
    fc.record({ kind: fc.constant('append' as const), bytes, mutate: fc.oneof(fc.constant(0), fc.nat(40)) }),
    fc.record({ kind: fc.constant('delta' as const), bytes, mutate: fc.oneof(fc.constant(0), fc.nat(40)) }),
    fc.record({ kind: fc.constant('done' as const), reported: fc.boolean() }),
  );
  fc.assert(
    fc.property(fc.array(step, { maxLength: 40 }), (steps) => {
      const codec = new SvcRealtimeV1Codec();
      const fast = new UsageMeter(REFERENCE_TOKENS, { provider: 'local', provider_model: 'echo-1' });
      const slow = new UsageMeter(REFERENCE_TOKENS, { provider: 'local', provider_model: 'echo-1' });
      for (const s of steps) {
        if (s.kind === 'append') {
          const audio = mutate(Buffer.from(s.bytes).toString('base64'), s.mutate);
          // Fast: the codec's append path; slow: decode and check the bytes, as before.
          const e = codec.decode(Buffer.from(JSON.stringify({ type: 'input_audio_buffer.append', audio })), false);
          const ref = slowPcmFrame(audio);
          if (e.type === 'audio.append') fast.addInput(e.audio.bytes);
          if (typeof ref !== 'string') slow.addInput(ref.length);
          if ((e.type === 'audio.append') !== (typeof ref !== 'string')) return false;
        } else if (s.kind === 'delta') {
          const delta = mutate(Buffer.from(s.bytes).toString('base64'), s.mutate);
          // The openai adapter: carried through when strict, else decoded; before, always decoded.
          const a = Audio.ofProviderBase64(delta);
          const ref = Buffer.from(delta, 'base64');
          if (a.bytes > 0) fast.addOutput(a.bytes);
          if (ref.length > 0) slow.addOutput(ref.length);
          if (!a.pcm.equals(ref)) return false;
        } else {
          fast.responseCreated();
          slow.responseCreated();
          const f = fast.responseDone(null);
          const r = slow.responseDone(null);
          if (JSON.stringify(f) !== JSON.stringify(r)) return false;
        }
        if (JSON.stringify(fast.usage()) !== JSON.stringify(slow.usage())) return false;
      }
      return true;
    }),
    { numRuns: 500 },
  );
});

t.test('the compact append path gives what the full path gives, on every frame it takes (property)', async () => {
  const audio = fc.oneof(
    fc.uint8Array({ maxLength: 40 }).map((b) => Buffer.from(b).toString('base64')),
    fc.string({ maxLength: 10 }),
    fc.constant('AQ==AQ=='),
    fc.constant(wavHeader(4).toString('base64')),
  );
  const eventId = fc.oneof(fc.constant(undefined), fc.string({ maxLength: 4 }), fc.string({ minLength: 126, maxLength: 130 }), fc.nat());
  const extra = fc.oneof(fc.constant({}), fc.constant({ x: 1 }), fc.constant({ audio_format: 'pcm' }));
  const frame = fc
    .tuple(audio, eventId, extra, fc.boolean())
    .map(([a, id, x, audioFirst]) =>
      JSON.stringify(
        audioFirst
          ? { audio: a, type: 'input_audio_buffer.append', ...(id === undefined ? {} : { event_id: id }), ...x }
          : { type: 'input_audio_buffer.append', ...(id === undefined ? {} : { event_id: id }), audio: a, ...x },
      ),
    );
  fc.assert(
    fc.property(frame, (text) => {
      const fast = readCompactAppend(Buffer.from(text));
      // The codec takes it only with a valid event id (its own rule), else parses the frame whole.
      if (fast === null || (fast.eventId !== undefined && validEventId(fast.eventId) === undefined)) return true;
      const msg = JSON.parse(text) as Record<string, unknown>;
      if (!isAppendShape(msg)) return false;
      const slow = slowPcmFrame(msg.audio);
      return typeof slow !== 'string' && fast.audio.pcm.equals(slow) && fast.eventId === msg.event_id;
    }),
    { numRuns: 5_000 },
  );
  // Frames the fast path declines go the full way, which refuses or reads them.
  const codec = new SvcRealtimeV1Codec();
  for (const text of [
    '{"type":"input_audio_buffer.append","audio":"AQ=="}',
    '{"type":"input_audio_buffer.append","audio":"AQIDBA==","x":1}',
  ]) {
    t.equal(readCompactAppend(Buffer.from(text)), null, text);
    t.equal(codec.decode(Buffer.from(text), false).type, 'refusal', text);
  }
  t.equal(codec.decode(Buffer.from('{"type":"input_audio_buffer.append","audio":"AQIDBA==","event_id":""}'), false).type, 'refusal');
  const escaped = '{"type":"input_audio_buffer.append","audio":"AQID\\u0042A=="}';
  t.equal(readCompactAppend(Buffer.from(escaped)), null, 'an escape in the audio: parsed whole');
  const unescaped = codec.decode(Buffer.from(escaped), false);
  t.ok(unescaped.type === 'audio.append' && unescaped.audio.base64 === 'AQIDBA==', 'and read as JSON reads it');
  const ok = codec.decode(Buffer.from('{"type":"input_audio_buffer.append","event_id":"e1","audio":"AQIDBA=="}'), false);
  t.same(ok.type === 'audio.append' && { id: ok.eventId, bytes: ok.audio.bytes, b64: ok.audio.base64 }, {
    id: 'e1',
    bytes: 4,
    b64: 'AQIDBA==',
  });
});

t.test('Audio.writeTo writes the decoded bytes whatever was checked last (the check leaves them in its scratch)', async () => {
  fc.assert(
    fc.property(
      fc.array(fc.tuple(fc.uint8Array({ minLength: 1, maxLength: 3000 }), fc.nat(3), fc.boolean()), { minLength: 1, maxLength: 8 }),
      (steps) => {
        const audios = steps.map(([bytes]) => {
          const b64 = Buffer.from(bytes).toString('base64');
          return Audio.ofCheckedBase64(b64, checkBase64(b64));
        });
        for (const [k, [bytes, other, recheck]] of steps.entries()) {
          // Check another text (or this one again, as a fresh string) between this one's check and its write.
          if (recheck) checkBase64(other === 0 ? `${audios[k]!.base64}` : audios[(k + other) % audios.length]!.base64);
          const target = Buffer.alloc(bytes.length + 8, 0xee);
          audios[k]!.writeTo(target, 4);
          if (Buffer.compare(target.subarray(4, 4 + bytes.length), Buffer.from(bytes)) !== 0) return false;
          if (target[3] !== 0xee || target[4 + bytes.length] !== 0xee) return false;
        }
        return true;
      },
    ),
    { numRuns: 1000 },
  );
});
