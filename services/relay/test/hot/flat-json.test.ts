// hot/flat-json.ts against the plain path, JSON.parse: what the byte reader accepts it reads exactly as
// JSON.parse does (random frames, near misses, memo or not), it accepts every compact flat frame (so the fast
// path is taken), and the edge cases decline or read as JSON.parse reads them.
import fc from 'fast-check';
import t from 'tap';
import { checkBase64 } from '../../src/audio.js';
import { FlatMemo, FlatShape } from '../../src/hot/flat-json.js';

t.test('FlatShape reads exactly what JSON.parse reads, or declines (property)', async () => {
  const keys = ['type', 'event_id', 'audio', 'n'];
  const shape = new FlatShape(keys, 2);
  const closed = new FlatShape(keys, 2, true);
  // Known values of `type` answered as constants, and one memo across every frame (hits and misses alike).
  const consts = new FlatShape(keys, 2, false, { 0: ['a', '', 'input_audio_buffer.append'] });
  const memo = new FlatMemo();
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
        if (!s.read(Buffer.from(text), out, withMemo ? memo : undefined)) continue;
        let parsed: Record<string, unknown>;
        try {
          parsed = JSON.parse(text) as Record<string, unknown>;
        } catch {
          // Only the long member is left unchecked: its caller checks it as strict base64, never escaped, so
          // a frame JSON.parse refuses is read only with a long member that fails that check.
          if (typeof out[2] !== 'string' || checkBase64(out[2]) >= 0) return false;
          continue;
        }
        if (typeof out[2] === 'string' && checkBase64(out[2]) < 0) continue;
        if (isClosed && Object.keys(parsed).some((k) => !keys.includes(k))) return false;
        for (const [i, k] of keys.entries()) if (parsed[k] !== out[i]) return false;
      }
      return true;
    }),
    { numRuns: 20_000 },
  );
});

t.test('FlatShape with a memo reads every frame as without one, heads repeated or not (property)', async (t) => {
  const keys = ['type', 'response_id', 'n', 'delta'];
  const shapes = [new FlatShape(keys, 3, false, { 0: ['d'] }), new FlatShape(keys, 3, true, { 0: ['d'] })];
  // Heads up to the long value's quote: repeated, one byte apart, prefixes of one another, members repeated.
  const head = fc.constantFrom(
    '{"type":"d","response_id":"r1","n":0,"delta":"',
    '{"type":"d","response_id":"r2","n":0,"delta":"',
    '{"type":"d","response_id":"r1","n":1,"delta":"',
    '{"type":"d","response_id":"r1","n":10,"delta":"',
    '{"type":"e","response_id":"r1","delta":"',
    '{"type":"d","x":"r1","n":0,"delta":"',
    '{"event_id":"e1","type":"d","delta":"',
    '{"event_id":"e2","type":"d","delta":"',
    '{"delta":"',
    '{"n":0,"delta":"',
    '{"x":0,"delta":"',
    '{"n":0,"n":1,"delta":"',
    '{"type":"d","type":"d","delta":"',
    '{"type":"d","response_id":"r1\\u0041","delta":"',
    '{"type":"d" ,"delta":"',
  );
  const value = fc.oneof(fc.constantFrom('AQID', 'AQ==', '', 'A\\"', '\u00e9'), fc.base64String({ maxLength: 12 }));
  const tail = fc.constantFrom(
    '"}',
    '","event_id":"e9"}',
    '","n":5}',
    '","type":"d"}',
    '","delta":"AQID"}',
    '"',
    '"x}',
    '","n":01}',
    '"}}',
    '",}',
  );
  // A frame: a head (mostly one of the sequence's two), its long value and a tail; or a head cut short.
  const frame = (heads: [string, string]) =>
    fc.oneof(
      fc.tuple(fc.nat(4), head, value, tail).map(([k, h, v, x]) => (k < 2 ? heads[k]! : k === 2 ? heads[0] : h) + v + x),
      fc.tuple(head, fc.nat(60)).map(([h, k]) => h.slice(0, k % (h.length + 1))),
    );
  const sequence = fc.tuple(head, head).chain((heads) => fc.array(frame(heads), { minLength: 1, maxLength: 12 }));
  let hits = 0;
  fc.assert(
    fc.property(sequence, (texts) => {
      const memos = shapes.map(() => new FlatMemo());
      for (const m of memos) {
        const same = m.sameHead.bind(m);
        m.sameHead = (buf) => (same(buf) ? (hits++, true) : false);
      }
      const a: (string | number | undefined)[] = [];
      const b: (string | number | undefined)[] = [];
      for (const text of texts) {
        for (const [k, s] of shapes.entries()) {
          const buf = Buffer.from(text, 'latin1');
          if (s.read(buf, a, memos[k]) !== s.read(buf, b)) return false;
          for (let i = 0; i < keys.length; i++) if (a[i] !== b[i]) return false;
        }
      }
      return true;
    }),
    { numRuns: 5_000 },
  );
  t.ok(hits > 2000, `frames read from a remembered head: ${hits}`);
});

const KEYS = ['type', 'event_id', 'audio', 'n'];

/** Reads `text` with `shape`: null when it declines, else the slots. */
function read(shape: FlatShape, text: string, memo?: FlatMemo): (string | number | undefined)[] | null {
  const out: (string | number | undefined)[] = [];
  return shape.read(Buffer.from(text), out, memo) ? out : null;
}

t.test('FlatShape on the edge cases: declines what it does not read as JSON.parse does', async (t) => {
  const open = new FlatShape(KEYS, 2);
  const closed = new FlatShape(KEYS, 2, true);
  const u = undefined;
  const cases: [text: string, open: (string | number | undefined)[] | null, closed: (string | number | undefined)[] | null][] = [
    ['{}', [u, u, u, u], [u, u, u, u]],
    ['{"type":"a"}', ['a', u, u, u], ['a', u, u, u]],
    ['{"n":0}', [u, u, u, 0], [u, u, u, 0]],
    ['{"n":999999999999999}', [u, u, u, 999999999999999], [u, u, u, 999999999999999]],
    ['{"audio":"AQID","event_id":"e","type":"t","n":7}', ['t', 'e', 'AQID', 7], ['t', 'e', 'AQID', 7]],
    ['{"x":"1","type":"a"}', ['a', u, u, u], null], // an unknown member: skipped, or refused when closed
    ['{"x":12,"type":"a"}', ['a', u, u, u], null],
    ['', null, null],
    ['{', null, null],
    ['{"type":"a"', null, null],
    ['{"type":"a"}x', null, null],
    ['{"type":"a",}', null, null],
    ['{"type" :"a"}', null, null], // whitespace
    ['{ "type":"a"}', null, null],
    ['{"type":"a\\"b"}', null, null], // an escape
    ['{"type":"\\u0041"}', null, null], // an escaped character, even ASCII
    ['{"type":"\\u00e9"}', null, null],
    ['{"type":"a","type":"b"}', null, null], // repeated: JSON.parse keeps the last
    ['{"n":01}', null, null], // a leading zero is not JSON
    ['{"n":-1}', null, null],
    ['{"n":1.5}', null, null],
    ['{"n":1e3}', null, null],
    ['{"n":1000000000000000}', null, null], // 16 digits: not read, though exact
    ['{"n":null}', null, null],
    ['{"n":true}', null, null],
    ['{"n":{}}', null, null],
    ['{"n":[]}', null, null],
    ['{"type":["a"]}', null, null],
    ['[]', null, null],
  ];
  for (const [text, o, c] of cases) {
    t.same(read(open, text), o, `open: ${text}`);
    t.same(read(closed, text), c, `closed: ${text}`);
    // Whatever is read is what JSON.parse reads.
    const got = read(open, text);
    if (got !== null) {
      const parsed = JSON.parse(text) as Record<string, unknown>;
      t.same(
        got,
        KEYS.map((k) => parsed[k]),
        `as JSON.parse: ${text}`,
      );
    }
  }
  // A non-ASCII byte in a short member: declined (the long member is left to its caller's base64 check).
  t.equal(open.read(Buffer.from('{"type":"é"}'), []), false);
  t.equal(open.read(Buffer.from('{"type":"a\u0001"}'), []), false, 'a control byte');
});

t.test('FlatShape reads every compact flat frame, as JSON.parse reads it (property)', async () => {
  const plain = fc.string({ unit: fc.constantFrom(...' !#$%&()*+,-./0123456789:;<=>?@ABCXYZ[]^_`abcxyz{|}~'), maxLength: 12 });
  const value = fc.oneof(plain, fc.nat({ max: 999_999_999_999_999 }));
  const member = fc.tuple(fc.constantFrom(...KEYS, 'x', 'other_key'), value);
  const frame = fc.uniqueArray(member, { selector: ([k]) => k, maxLength: 6 }).map((ms) => JSON.stringify(Object.fromEntries(ms)));
  const shapes = [new FlatShape(KEYS, 2), new FlatShape(KEYS, 2, false, { 0: ['a', 'input_audio_buffer.append'] })];
  const memo = new FlatMemo();
  fc.assert(
    fc.property(frame, (text) => {
      const parsed = JSON.parse(text) as Record<string, unknown>;
      const expected = KEYS.map((k) => parsed[k]);
      for (const [k, s] of shapes.entries()) {
        const got = read(s, text, k === 1 ? memo : undefined);
        if (got === null || JSON.stringify(got) !== JSON.stringify(expected)) return false;
      }
      return true;
    }),
    { numRuns: 5_000 },
  );
});
