// The phone codec per 20 ms frame, in process (docs/benchmarks.md, "Relay: phone mode"): a Twilio `media` message
// decoded to the provider's PCM16 24 kHz and 20 ms of the provider's answer encoded to a μ-law `media` message,
// by the relay's PhoneCodec, and the part of it that is the rate change (packages/audio's Resampler, 8 → 24 kHz
// and 24 → 8 kHz). With `--against=<tree>`: this tree's Resampler against that tree's
// (packages/audio/src/resampler.ts, which imports nothing of the workspace), alternated blocks in one process,
// checked to give the same samples; the figure is this ÷ that per pair of blocks.
//   node --conditions=@s2s/source --import tsx bench/relay/phone-codec.ts [--frames=2000] [--pairs=20] [--against=<tree>]
import { parseArgs } from 'node:util';
import { DOWN_24K_TO_8K, Resampler, UP_8K_TO_24K } from '@s2s/audio';
import { Audio, PhoneCodec, twilioWire } from '@s2s/relay/bench';
import { expMeanInterval } from './ab-stats.js';
import { loadavg } from './tree.js';
import { muLawFrameBase64, twilioIds, twilioMedia } from './twilio-stream.js';

const { values: opt } = parseArgs({ options: { frames: { type: 'string' }, pairs: { type: 'string' }, against: { type: 'string' } } });
const FRAMES = Number(opt.frames ?? 2000);
const PAIRS = Number(opt.pairs ?? 20);

const ids = twilioIds(0);
const payload = muLawFrameBase64();
const media = Array.from({ length: 64 }, (_, k) => Buffer.from(twilioMedia(ids, k, payload)));
// 20 ms of the provider's answer: 480 samples of PCM16 24 kHz, base64 as a delta carries it.
const answerPcm = Buffer.alloc(960);
for (let i = 0; i < 480; i++) answerPcm.writeInt16LE(Math.round(3000 * Math.sin((2 * Math.PI * 440 * i) / 24000)), 2 * i);
const answerB64 = answerPcm.toString('base64');
const place = { responseId: 'resp_bench', itemId: 'item_bench', outputIndex: 0, contentIndex: 0 };
const in8k = new Int16Array(160).map((_, i) => Math.round(3000 * Math.sin((2 * Math.PI * 440 * i) / 8000)));
const in24k = new Int16Array(answerPcm.buffer, answerPcm.byteOffset, 480);

let checksum = 0;

interface ResamplerClass {
  new (design: typeof UP_8K_TO_24K): { push(input: Int16Array): Int16Array };
}

/** µs per frame of `FRAMES` frames of `step`. */
function block(step: (k: number) => void): number {
  const t0 = performance.now();
  for (let k = 0; k < FRAMES; k++) step(k);
  return ((performance.now() - t0) * 1000) / FRAMES;
}

/** Both rate changes of one frame with a pair of resamplers of `R`. */
function rateChange(R: ResamplerClass): (k: number) => void {
  const up = new R(UP_8K_TO_24K);
  const down = new R(DOWN_24K_TO_8K);
  return () => {
    checksum += up.push(in8k)[7]! + down.push(in24k)[3]!;
  };
}

/** The whole codec per frame: one media message in, one 20 ms delta out. */
function codecFrame(): (k: number) => void {
  const codec = new PhoneCodec(twilioWire, ids.streamSid);
  codec.bind(() => {});
  return (k) => {
    const e = codec.decode(media[k & 63]!, false);
    const out = codec.encode({ type: 'response.audio.delta', place, audio: Audio.ofCheckedBase64(answerB64, answerPcm.length) });
    checksum += (e === null ? 0 : 1) + (out === null ? 0 : 1);
  };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

/** Alternated blocks of `a` and `b` (a b b a …); medians and the geometric mean of b ÷ a with its interval. */
function alternate(a: (k: number) => void, b: (k: number) => void): { a: number; b: number; ratio: ReturnType<typeof expMeanInterval> } {
  // Warm-up: both optimised before any figure.
  for (let i = 0; i < 3; i++) {
    block(a);
    block(b);
  }
  const as: number[] = [];
  const bs: number[] = [];
  for (let r = 0; r < PAIRS; r++) {
    if (r & 1) bs.push(block(b));
    as.push(block(a));
    if (!(r & 1)) bs.push(block(b));
  }
  return { a: median(as), b: median(bs), ratio: expMeanInterval(as.map((x, i) => Math.log(bs[i]! / x))) };
}

const f = (v: number, d = 2) => v.toFixed(d);
const load0 = loadavg();
const codec = alternate(rateChange(Resampler), codecFrame());
process.stdout.write(
  `phone codec, ${PAIRS} alternated pairs of ${FRAMES}-frame blocks: the whole codec ${f(codec.b)} µs per frame (a media message in, ` +
    `20 ms out), of which the rate change both ways ${f(codec.a)} µs (${f((100 * codec.a) / codec.b, 0)} %); load ${f(load0)} → ${f(loadavg())}\n`,
);

if (opt.against) {
  const other = (await import(`${opt.against}/packages/audio/src/resampler.ts`)) as { Resampler: ResamplerClass };
  // The same samples, or the comparison means nothing.
  const [mine, theirs] = [Resampler, other.Resampler].map((R) => {
    const up = new R(UP_8K_TO_24K);
    const down = new R(DOWN_24K_TO_8K);
    return Array.from({ length: 50 }, () => [...up.push(in8k), ...down.push(in24k)]).flat();
  });
  if (mine!.length !== theirs!.length || mine!.some((v, i) => v !== theirs![i]))
    throw new Error('the two resamplers give different samples');
  const r = alternate(rateChange(other.Resampler), rateChange(Resampler));
  process.stdout.write(
    `rate change both ways per frame, same samples: ${f(r.a)} µs (${opt.against}) against ${f(r.b)} µs (this tree): ` +
      `this ÷ that ${f(r.ratio.estimate, 3)} (95 % ${f(r.ratio.low, 3)}–${f(r.ratio.high, 3)}, ${PAIRS} pairs); load ${f(loadavg())}\n`,
  );
}
process.stdout.write(`(checksum ${checksum % 1000})\n`);
