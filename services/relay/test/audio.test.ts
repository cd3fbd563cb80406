// The audio fast paths (issue 13): frames carried through as base64 are validated exactly as the decoding
// path validated them, and metering counts exactly the bytes the decoding path counted.
import fc from 'fast-check';
import t from 'tap';
import { REFERENCE_TOKENS } from '@s2s/core';
import { Audio, checkBase64, checkBase64Bytes } from '../src/audio.js';
import { isBase64Alphabet, isBase64AlphabetJs, SIMD_IN_USE } from '../src/base64-alphabet.js';
import { OpenAIGaCodec } from '../src/codec/openai-ga.js';
import { decodePcmFrame, decodePcmFrameBytes, readCompactAppend, type AudioFrameProblem } from '../src/codec/pcm-frame.js';
import { isAppendShape, SvcRealtimeV1Codec, validEventId } from '../src/codec/svc-realtime-v1.js';
import { FlatShape } from '../src/flat-json.js';
import { UsageMeter } from '../src/providers/base.js';

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

/** `text`'s bytes (latin1) at byte offset `at` of a larger buffer, between bytes `around`: as a frame holds them. */
function embedded(text: string, at: number, around: number): Buffer {
  const buf = Buffer.alloc(at + text.length + 5, around);
  buf.write(text, at, 'latin1');
  return buf;
}

function sameVerdict(audio: string): boolean {
  const fast = decodePcmFrame(audio);
  const slow = slowPcmFrame(audio);
  if (typeof slow === 'string') {
    if (fast !== slow) return false;
  } else if (!(fast instanceof Audio && fast.bytes === slow.length && fast.base64 === audio && fast.pcm.equals(slow))) return false;
  if ([...audio].some((c) => c.charCodeAt(0) > 0xff)) return true; // not a frame's bytes read as latin1
  // The byte path, at every alignment, with bytes around that would change the verdict if they were read.
  for (let at = 0; at < 4; at++) {
    for (const around of [0x21, 0x3d, 0x41]) {
      const frame = embedded(audio, at, around);
      const bytes = decodePcmFrameBytes(frame, at, at + audio.length);
      if (typeof slow === 'string') {
        if (bytes !== slow) return false;
        continue;
      }
      if (!(bytes instanceof Audio) || bytes.bytes !== slow.length || bytes.base64Length !== audio.length) return false;
      if (bytes.base64 !== audio || !bytes.pcm.equals(slow)) return false;
    }
  }
  return true;
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

t.test('checkBase64Bytes: every single-byte corruption of strict base64, at every alignment, as the strict pattern says', async (t) => {
  const texts = [
    Buffer.from([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18]).toString('base64'), // 24 chars, no padding
    Buffer.from([250, 251, 252, 253, 254, 255, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10]).toString('base64'), // one pad
    Buffer.from([0xfb, 0xff, 0xbf, 0x3e, 0x3f, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10]).toString('base64'), // two pads, '+' and '/'
  ];
  let checked = 0;
  for (const good of texts) {
    for (let k = 0; k < good.length; k++) {
      for (let c = 0; c < 256; c++) {
        const text = good.slice(0, k) + String.fromCharCode(c) + good.slice(k + 1);
        const expected = STRICT.test(text) ? Buffer.from(text, 'base64').length : -1;
        for (let at = 0; at < 4; at++) {
          if (checkBase64Bytes(embedded(text, at, 0x21), at, at + text.length) !== expected) {
            t.fail(`${JSON.stringify(text)} at ${at}: expected ${expected}`);
            return;
          }
          checked++;
        }
      }
    }
  }
  t.pass(`${checked} corruptions`);
  // Padding at every position of a longer text, and the URL-safe alphabet anywhere.
  const long = Buffer.alloc(300, 0x5a).toString('base64');
  for (let k = 0; k < long.length; k++) {
    for (const c of ['=', '-', '_', '\u00e9', '\\', '"']) {
      const text = long.slice(0, k) + c + long.slice(k + 1);
      const expected = STRICT.test(text) ? Buffer.from(text, 'base64').length : -1;
      t.equal(checkBase64Bytes(embedded(text, k % 4, 0x41), k % 4, (k % 4) + text.length), expected, `${JSON.stringify(c)} at ${k}`);
    }
  }
  t.equal(checkBase64Bytes(Buffer.from('AAAA'), 2, 1), -1, 'a range that ends before it starts');
  t.equal(checkBase64Bytes(Buffer.from('AAAA'), 2, 2), 0, 'an empty range');
  const big = Buffer.from(Buffer.alloc(100_000, 7).toString('base64'), 'latin1');
  t.equal(checkBase64Bytes(big, 0, big.length), 100_000, 'a frame past any scratch buffer');
});

t.test('the alphabet scan (WebAssembly SIMD and the table loop) finds every byte outside the alphabet, anywhere', async (t) => {
  t.ok(SIMD_IN_USE, 'WebAssembly SIMD is available on this Node (else the table loop alone is tested)');
  const alphabet = /^[A-Za-z0-9+/]*$/;
  let checked = 0;
  // Every byte value at every position of ranges of every length up to 100 and past 64 KiB, at four alignments.
  for (const n of [...Array.from({ length: 100 }, (_, i) => i + 1), 65_504, 65_505, 70_000]) {
    const positions = n <= 100 ? Array.from({ length: n }, (_, k) => k) : [0, 31, 32, n - 33, n - 1];
    for (const k of positions) {
      for (let c = 0; c < 256; c++) {
        const at = (k + c) & 3;
        const text = 'A'.repeat(k) + String.fromCharCode(c) + 'z'.repeat(n - k - 1);
        const frame = embedded(text, at, 0x21);
        const expected = alphabet.test(String.fromCharCode(c));
        if (isBase64Alphabet(frame, at, at + n) !== expected || isBase64AlphabetJs(frame, at, at + n) !== expected) {
          t.fail(`byte ${c} at ${k} of ${n}`);
          return;
        }
        checked++;
      }
    }
  }
  t.ok(isBase64Alphabet(Buffer.alloc(0), 0, 0) && isBase64AlphabetJs(Buffer.alloc(0), 0, 0), 'an empty range');
  t.pass(`${checked} ranges`);
});

t.test('checkBase64Bytes equals the strict pattern on generated bytes at every alignment (property)', async () => {
  const valid = fc.uint8Array({ maxLength: 200 }).map((b) => Buffer.from(b).toString('base64'));
  const byte = fc.oneof(fc.nat(255), fc.constantFrom(0x3d, 0x2d, 0x5f, 0x2b, 0x2f, 0x22, 0x5c, 0x0a, 0x20, 0x80, 0xc3, 0xff));
  const corrupted = fc.tuple(valid, fc.array(fc.tuple(fc.nat(400), byte), { minLength: 1, maxLength: 3 })).map(([s, edits]) => {
    let out = s;
    for (const [i, c] of edits) {
      const k = i % (out.length + 1);
      out = out.slice(0, k) + String.fromCharCode(c) + out.slice(k + 1);
    }
    return out;
  });
  const junk = fc.array(byte, { maxLength: 24 }).map((a) => String.fromCharCode(...a));
  fc.assert(
    fc.property(fc.oneof(valid, corrupted, junk), fc.nat(7), fc.constantFrom(0x21, 0x3d, 0x41, 0x00), (text, at, around) => {
      const expected = STRICT.test(text) ? Buffer.from(text, 'base64').length : -1;
      return checkBase64Bytes(embedded(text, at, around), at, at + text.length) === expected && checkBase64(text) === expected;
    }),
    { numRuns: 20_000 },
  );
});

t.test('audio kept as the bytes of its frame reads, writes and decodes as the same audio kept as text (property)', async () => {
  fc.assert(
    fc.property(fc.uint8Array({ minLength: 1, maxLength: 3000 }), fc.nat(7), (pcm, at) => {
      const b64 = Buffer.from(pcm).toString('base64');
      const frame = embedded(b64, at, 0x22);
      const bytes = checkBase64Bytes(frame, at, at + b64.length);
      const viewed = Audio.ofCheckedBase64Bytes(frame, at, at + b64.length, bytes);
      const text = Audio.ofCheckedBase64(b64, checkBase64(b64));
      if (viewed.bytes !== pcm.length || viewed.base64Length !== b64.length || text.base64Length !== b64.length) return false;
      const a = Buffer.alloc(b64.length + 6, 0xee);
      const b = Buffer.alloc(b64.length + 6, 0xee);
      if (viewed.writeBase64To(a, 3) !== 3 + b64.length || text.writeBase64To(b, 3) !== 3 + b64.length || !a.equals(b)) return false;
      const p = Buffer.alloc(pcm.length + 6, 0xee);
      const q = Buffer.alloc(pcm.length + 6, 0xee);
      viewed.writeTo(p, 3);
      text.writeTo(q, 3);
      if (!p.equals(q) || !p.subarray(3, 3 + pcm.length).equals(Buffer.from(pcm))) return false;
      // A copy owns its bytes: the frame reused afterwards does not change it.
      const owned = Audio.ofCheckedBase64Bytes(frame, at, at + b64.length, bytes).owned();
      frame.fill(0x41);
      return (
        owned.base64 === b64 && owned.bytes === pcm.length && viewed.pcm.equals(Buffer.from(pcm)) && owned.pcm.equals(Buffer.from(pcm))
      );
    }),
    { numRuns: 500 },
  );
});

/** The same frame with a space after `{`: the fast path declines it, so the codec parses it whole (the slow path). */
function slowWay(frame: string): Buffer {
  return Buffer.from('{ ' + frame.slice(1));
}

/** What a decoded client event says, to compare the two paths. */
function verdict(e: ReturnType<SvcRealtimeV1Codec['decode']>): unknown {
  if (e.type === 'audio.append')
    return { type: e.type, eventId: e.eventId, bytes: e.audio.bytes, pcm: e.audio.pcm.toString('hex'), b64: e.audio.base64 };
  return e;
}

t.test(
  'appends read from the bytes give the full path event or refusal (same code, message, param), both dialects (property)',
  async () => {
    const who = { id: 'vs_abc', model: 'openai/gpt-realtime' };
    const codecs = [new SvcRealtimeV1Codec(), new OpenAIGaCodec(who)];
    const valid = fc.oneof(
      fc.uint8Array({ maxLength: 60 }).map((b) => Buffer.from(b).toString('base64')),
      fc.uint8Array({ minLength: 900, maxLength: 1000 }).map((b) => Buffer.from(b).toString('base64')),
      fc.uint8Array({ maxLength: 20 }).map((b) => Buffer.concat([wavHeader(b.length), b]).toString('base64')),
    );
    // Inside the JSON string: any character (escaped by JSON.stringify when it must be), or a raw escape sequence.
    const piece = fc.oneof(
      fc.constantFrom('=', '-', '_', ' ', '\n', '\u00e9', '\u20ac', '\u0000', '"', '\\', '/', '+', 'A'),
      fc.string({ unit: 'binary', minLength: 1, maxLength: 2 }),
    );
    const audio = fc.oneof(
      valid,
      fc.tuple(valid, fc.nat(2000), piece, fc.boolean()).map(([s, i, c, insert]) => {
        const k = i % (s.length + 1);
        return s.slice(0, k) + c + s.slice(insert ? k : k + 1);
      }),
    );
    const eventId = fc.oneof(fc.constant(undefined), fc.constantFrom('e1', '', 'x'.repeat(200)), fc.nat());
    const rawEscape = fc.tuple(valid, fc.nat(2000)).map(([s, i]) => {
      // An escaped base64 character (\u0041 is "A"): JSON reads the letter, the byte reader sees a backslash.
      const k = s.length === 0 ? 0 : i % s.length;
      return { raw: s.slice(0, k) + '\\u00' + s.charCodeAt(k).toString(16).padStart(2, '0') + s.slice(k + 1) };
    });
    const frame = fc.oneof(
      fc
        .tuple(audio, eventId, fc.boolean())
        .map(([a, id, audioFirst]) =>
          JSON.stringify(
            audioFirst
              ? { audio: a, type: 'input_audio_buffer.append', ...(id === undefined ? {} : { event_id: id }) }
              : { type: 'input_audio_buffer.append', ...(id === undefined ? {} : { event_id: id }), audio: a },
          ),
        ),
      rawEscape.map(({ raw }) => `{"type":"input_audio_buffer.append","audio":"${raw}"}`),
    );
    fc.assert(
      fc.property(frame, (text) => {
        for (const codec of codecs) {
          const fast = verdict(codec.decode(Buffer.from(text), false));
          const slow = verdict(codec.decode(slowWay(text), false));
          if (JSON.stringify(fast) !== JSON.stringify(slow)) return false;
        }
        return true;
      }),
      { numRuns: 5_000 },
    );
  },
);

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

/** The openai adapter's delta path in small: the base64 read from the frame's bytes when strict, else decoded. */
const DELTA_ONLY = new FlatShape(['delta'], 0);
const deltaOut: (string | number | undefined)[] = [];

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
          const frame = Buffer.from(JSON.stringify({ delta }));
          const strict =
            DELTA_ONLY.read(frame, deltaOut) && typeof deltaOut[0] === 'number'
              ? checkBase64Bytes(frame, deltaOut[0], DELTA_ONLY.longEnd)
              : -1;
          const a =
            strict >= 0
              ? Audio.ofCheckedBase64Bytes(frame, deltaOut[0] as number, DELTA_ONLY.longEnd, strict)
              : Audio.ofProviderBase64(delta);
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

t.test('FlatShape reads exactly what JSON.parse reads, or declines (property)', async () => {
  const keys = ['type', 'event_id', 'audio', 'n'];
  const shape = new FlatShape(keys, 2);
  const closed = new FlatShape(keys, 2, true);
  // Known values of `type` answered as constants, and one memo across every frame (hits and misses alike).
  const consts = new FlatShape(keys, 2, false, { 0: ['a', '', 'input_audio_buffer.append'] });
  const memo: (string | number | undefined)[] = [];
  const value = fc.oneof(
    fc.constantFrom('a', '', 'b', 'input_audio_buffer.append', 'e1'),
    // Near misses of the constants and of a memo's previous value (matched where they stand).
    fc.constantFrom('ab', 'input_audio_buffer.appen', 'input_audio_buffer.appendx', 'e', 'e1x', 'a"', 'a\\'),
    fc.string({ maxLength: 6 }),
    fc.string({ unit: 'binary', maxLength: 4 }),
    fc.nat(),
    fc.integer({ min: -5, max: 5 }),
    fc.double(),
    fc.constant(null),
    fc.boolean(),
    fc.constant({ a: 1 }),
    fc.base64String({ maxLength: 12 }),
  );
  // Keys: the ones read, near misses of them (matched where they stand), others.
  const key = fc.oneof(
    fc.constantFrom(...keys),
    fc.constantFrom('typ', 'typex', 'audi', 'audio"', 'n\\', 'nn'),
    fc.string({ maxLength: 3 }),
  );
  const member = fc.tuple(key, value);
  const frame = fc.oneof(
    fc.array(member, { maxLength: 5 }).map((ms) => '{' + ms.map(([k, v]) => `${JSON.stringify(k)}:${JSON.stringify(v)}`).join(',') + '}'),
    fc
      .tuple(
        fc.array(member, { maxLength: 4 }),
        fc.nat(60),
        fc.constantFrom(' ', '"', '\\', ',', '}', '{', ':', '0', '\u00e9'),
        fc.boolean(),
      )
      .map(([ms, i, c, replace]) => {
        // One character inserted, or put in place of another.
        const s = '{' + ms.map(([k, v]) => `${JSON.stringify(k)}:${JSON.stringify(v)}`).join(',') + '}';
        const k = i % (s.length + 1);
        return s.slice(0, k) + c + s.slice(replace ? k + 1 : k);
      }),
  );
  const out: (string | number | undefined)[] = [];
  fc.assert(
    fc.property(frame, (text) => {
      for (const [s, isClosed, withMemo] of [
        [shape, false, false],
        [closed, true, false],
        [consts, false, true],
      ] as const) {
        const buf = Buffer.from(text);
        if (!s.read(buf, out, withMemo ? memo : undefined)) continue;
        // The long member comes as where its bytes are; its caller checks them as strict base64.
        if (out[2] !== undefined && (typeof out[2] !== 'number' || s.longEnd < out[2])) return false;
        const strict = typeof out[2] === 'number' ? checkBase64Bytes(buf, out[2], s.longEnd) >= 0 : true;
        const long = typeof out[2] === 'number' ? buf.toString('latin1', out[2], s.longEnd) : undefined;
        let parsed: Record<string, unknown>;
        try {
          parsed = JSON.parse(text) as Record<string, unknown>;
        } catch {
          // Only the long member is left unchecked: its caller checks it as strict base64, never escaped, so
          // a frame JSON.parse refuses is read only with a long member that fails that check.
          if (out[2] === undefined || strict) return false;
          continue;
        }
        if (!strict) continue;
        if (isClosed && Object.keys(parsed).some((k) => !keys.includes(k))) return false;
        for (const [i, k] of keys.entries()) if (parsed[k] !== (i === 2 ? long : out[i])) return false;
      }
      return true;
    }),
    { numRuns: 20_000 },
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
