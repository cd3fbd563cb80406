// ws's Sender.send after a full GC that found none of its frame options alive, with and without
// services/relay/src/hot/ws-frame-options.ts holding one (each case in a fresh process, cases alternated over the rounds):
// a few sends (feedback recorded), the GC, then blocks of sends on a socket that drops what it is given.
// Prints the median ns per send of each case and the load average.
//   node --conditions=@s2s/source --import tsx bench/relay/ws-frame-options.ts [--rounds=3]
import { spawnSync } from 'node:child_process';
import { loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import * as ws from 'ws';
import { holdWsFrameOptions } from '@s2s/relay/bench';

const CASES = ['no GC', 'GC', 'GC, options held'] as const;
const BLOCKS = 12;
const SENDS_PER_BLOCK = 100_000;

interface SenderLike {
  send(data: Buffer, options: object): void;
}

function child(which: (typeof CASES)[number]): void {
  if (which === 'GC, options held') holdWsFrameOptions();
  const Sender = (ws as unknown as { Sender: new (socket: object) => SenderLike }).Sender;
  const sender = new Sender({ cork() {}, uncork() {}, write: () => true });
  const frame = Buffer.alloc(1400, 97);
  const options = { binary: false, mask: false, compress: false, fin: true };
  const block = (n: number): number => {
    const t = process.hrtime.bigint();
    for (let i = 0; i < n; i++) sender.send(frame, options);
    return Number(process.hrtime.bigint() - t) / n;
  };
  block(50);
  if (which !== 'no GC') (globalThis as { gc?: () => void }).gc!();
  const perBlock = Array.from({ length: BLOCKS }, () => block(SENDS_PER_BLOCK));
  process.stdout.write(JSON.stringify(perBlock.slice(2)));
}

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
};

const which = process.env.WS_FRAME_OPTIONS_CASE as (typeof CASES)[number] | undefined;
if (which) {
  child(which);
} else {
  const { values } = parseArgs({ options: { rounds: { type: 'string' } } });
  const rounds = Number(values.rounds ?? 3);
  const script = fileURLToPath(import.meta.url);
  const blocks = new Map<string, number[]>(CASES.map((c) => [c, []]));
  for (let r = 0; r < rounds; r++) {
    const order = CASES.map((_, i) => CASES[(i + r) % CASES.length]!);
    for (const c of order) {
      const out = spawnSync(process.execPath, ['--expose-gc', '--conditions=@s2s/source', '--import', 'tsx', script], {
        env: { ...process.env, WS_FRAME_OPTIONS_CASE: c },
        encoding: 'utf8',
      });
      if (out.status !== 0) throw new Error(out.stderr);
      blocks.get(c)!.push(...(JSON.parse(out.stdout) as number[]));
    }
    process.stderr.write(`round ${r + 1}/${rounds} done, load ${loadavg()[0]!.toFixed(2)}\n`);
  }
  for (const c of CASES) {
    const xs = blocks.get(c)!;
    console.log(`${c.padEnd(18)} ${median(xs).toFixed(0)} ns per send (median of ${xs.length} blocks of ${SENDS_PER_BLOCK})`);
  }
  console.log(`load average (1 min) ${loadavg()[0]!.toFixed(2)}`);
}
