// Each hot-path trick of services/relay/src/hot against the plain code it replaces, in process: blocks of the
// fast and the plain path alternated (A B B A …) on the same inputs, ns per operation of each, and the ratio
// fast ÷ plain per pair of blocks. Prints per trick the median ratio and a 95 % interval of the geometric mean
// of the pair ratios (t on the log ratios). Short: about 5 s per trick on a quiet core.
//   npm run bench -- relay:hot-tricks [--pairs=20] [--ops=20000] [--only=<name>]
// ws-frame-options.ts is not here: its gain appears only after a full GC in a fresh process (ws-frame-options.ts).
import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import jStat from 'jstat';
import { asciiBytes, Audio, audioDeltaFrame, AudioDeltaHeads, audioDeltaPrefix, EventIds, FlatMemo, FlatShape } from '@s2s/relay/bench';

const { values: opt } = parseArgs({
  strict: false,
  options: { pairs: { type: 'string' }, ops: { type: 'string' }, only: { type: 'string' } },
});
const PAIRS = Number(opt.pairs ?? 20);
const OPS = Number(opt.ops ?? 20_000);

// Inputs as the bench's traffic has them: 20 ms of 24 kHz PCM16 (960 bytes, 1,280 base64 characters).
const pcm = Buffer.from(Array.from({ length: 960 }, (_, i) => (i * 37) & 255));
const b64 = pcm.toString('base64');
const append = Buffer.from(JSON.stringify({ type: 'input_audio_buffer.append', event_id: 'f', audio: b64 }));
const delta = Buffer.from(
  JSON.stringify({
    type: 'response.output_audio.delta',
    response_id: 'resp_Ct1f0d2a9b',
    item_id: 'item_Ct1f0d2a9c',
    output_index: 0,
    content_index: 0,
    delta: b64,
  }),
);
const place = { responseId: 'resp_Ct1f0d2a9b', itemId: 'item_Ct1f0d2a9c', outputIndex: 0, contentIndex: 0 };
const audio = Audio.ofCheckedBase64(b64, pcm.length);
const AUDIO_MEMBER = asciiBytes('","audio":"');

// What each path hands on is kept, so neither is optimised away.
let sink: unknown;
let checksum = 0;

const APPEND = new FlatShape(['type', 'event_id', 'audio'], 2, true, { 0: ['input_audio_buffer.append'] });
const DELTA = new FlatShape(['type', 'response_id', 'item_id', 'output_index', 'content_index', 'delta'], 5, false, {
  0: ['response.output_audio.delta'],
});
const slots: (string | number | undefined)[] = [];
const appendMemo = new FlatMemo();
const deltaMemo = new FlatMemo();

const ids = new EventIds();
const heads = new AudioDeltaHeads();
const headBytes = heads.of(place);
const headText = audioDeltaPrefix(place) + '"event_id":"';

interface Trick {
  name: string;
  fast(): void;
  plain(): void;
}

const TRICKS: Trick[] = [
  {
    // flat-json.ts: the append in, read from its bytes (with the process's memo) or parsed.
    name: 'flat-json: append in',
    fast: () => {
      if (!APPEND.read(append, slots, appendMemo)) throw new Error('declined');
      sink = slots[2];
    },
    plain: () => {
      const m = JSON.parse(append.toString('utf8')) as { audio: string };
      sink = m.audio;
    },
  },
  {
    // flat-json.ts: a provider's delta out, read from its bytes (with the connection's memo) or parsed.
    name: 'flat-json: provider delta',
    fast: () => {
      if (!DELTA.read(delta, slots, deltaMemo)) throw new Error('declined');
      sink = slots[5];
    },
    plain: () => {
      const m = JSON.parse(delta.toString('utf8')) as { delta: string };
      sink = m.delta;
    },
  },
  {
    // frame-bytes.ts: the delta written into slab bytes, or the concatenation copied by Buffer.from (same head, same id).
    name: 'frame-bytes: delta out',
    fast: () => {
      const f = audioDeltaFrame(headBytes, 'evt_Ab3dE5gH1j2s', AUDIO_MEMBER, audio);
      checksum += f[f.length - 3]!;
    },
    plain: () => {
      const f = Buffer.from(headText + 'evt_Ab3dE5gH1j2s' + '","audio":"' + audio.base64 + '"}', 'latin1');
      checksum += f[f.length - 3]!;
    },
  },
  {
    // event-ids.ts: the id written as bytes (writeNext), or next()'s string written into the frame.
    name: 'event-ids: writeNext',
    fast: () => {
      const f = audioDeltaFrame(headBytes, ids, AUDIO_MEMBER, audio);
      checksum += f[f.length - 3]!;
    },
    plain: () => {
      const f = audioDeltaFrame(headBytes, ids.next(), AUDIO_MEMBER, audio);
      checksum += f[f.length - 3]!;
    },
  },
  {
    // audio-delta.ts AudioDeltaHeads: the head looked up per place object, or made per frame.
    name: 'audio-delta: heads',
    fast: () => {
      const f = audioDeltaFrame(heads.of(place), ids, AUDIO_MEMBER, audio);
      checksum += f[f.length - 3]!;
    },
    plain: () => {
      const f = audioDeltaFrame(asciiBytes(audioDeltaPrefix(place) + '"event_id":"'), ids, AUDIO_MEMBER, audio);
      checksum += f[f.length - 3]!;
    },
  },
];

function block(run: () => void): number {
  const t = process.hrtime.bigint();
  for (let i = 0; i < OPS; i++) run();
  return Number(process.hrtime.bigint() - t) / OPS;
}

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};

console.log(`node ${process.version}, ${PAIRS} pairs of ${OPS} ops, load average ${loadavg()[0]!.toFixed(2)}`);
for (const trick of TRICKS) {
  if (opt.only !== undefined && !trick.name.startsWith(String(opt.only))) continue;
  // Warm both paths up (optimised code for each) before anything is counted.
  for (let i = 0; i < 3; i++) {
    block(trick.fast);
    block(trick.plain);
  }
  const fast: number[] = [];
  const plain: number[] = [];
  for (let p = 0; p < PAIRS; p++) {
    // Alternate which goes first, so a drift of the machine hits both alike.
    const first = p % 2 === 0 ? trick.fast : trick.plain;
    const second = p % 2 === 0 ? trick.plain : trick.fast;
    const a = block(first);
    const b = block(second);
    fast.push(first === trick.fast ? a : b);
    plain.push(first === trick.fast ? b : a);
  }
  const logs = fast.map((f, i) => Math.log(f / plain[i]!));
  const mean = jStat.mean(logs);
  const half = (jStat.studentt.inv(0.975, logs.length - 1) * jStat.stdev(logs, true)) / Math.sqrt(logs.length);
  console.log(
    `${trick.name.padEnd(28)} fast ${median(fast).toFixed(0).padStart(6)} ns, plain ${median(plain).toFixed(0).padStart(6)} ns, ` +
      `fast ÷ plain ${median(fast.map((f, i) => f / plain[i]!)).toFixed(3)} (95 % ${Math.exp(mean - half).toFixed(3)}–${Math.exp(mean + half).toFixed(3)})`,
  );
}
console.log(`load average ${loadavg()[0]!.toFixed(2)} (checksum ${checksum & 1}, ${typeof sink})`);
