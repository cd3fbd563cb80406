import t from 'tap';
import { OutputPacer, type PacerClock } from '../src/index.js';

/** A clock the test moves by hand. */
function fakeClock() {
  let now = 0;
  let timers: { at: number; fn: () => void; id: number }[] = [];
  let nextId = 1;
  const clock: PacerClock = {
    now: () => now,
    setTimeout: (fn, ms) => {
      const id = nextId++;
      timers.push({ at: now + ms, fn, id });
      return id;
    },
    clearTimeout: (h) => {
      timers = timers.filter((x) => x.id !== h);
    },
  };
  const advance = (ms: number) => {
    const end = now + ms;
    for (;;) {
      timers.sort((a, b) => a.at - b.at);
      const next = timers[0];
      if (next === undefined || next.at > end) break;
      timers.shift();
      now = next.at;
      next.fn();
    }
    now = end;
  };
  return { clock, advance };
}

function recorder() {
  const frames: { at: number; marker: boolean; ts: number; bytes: Buffer }[] = [];
  const events: string[] = [];
  return { frames, events };
}

t.test('frames leave every 20 ms, the tail padded, then stopped', async (t) => {
  const { clock, advance } = fakeClock();
  const r = recorder();
  const pacer = new OutputPacer(
    {
      frame: (bytes, marker, ts) => r.frames.push({ at: clock.now(), marker, ts, bytes }),
      started: () => r.events.push('started'),
      stopped: () => r.events.push('stopped'),
    },
    clock,
  );
  pacer.push(Buffer.alloc(960 * 5 + 100, 1)); // 5 frames and 100 bytes
  t.equal(r.frames.length, 1, 'the first frame goes at once');
  advance(50);
  t.equal(r.frames.length, 3, 'then one per 20 ms');
  pacer.end();
  advance(200);
  t.equal(r.frames.length, 6);
  t.same(
    r.frames.map((f) => f.at),
    [0, 20, 40, 60, 80, 100],
  );
  t.same(r.events, ['started', 'stopped']);
  t.ok(r.frames[0]!.marker && !r.frames[1]!.marker, 'marker on the first frame only');
  t.same(
    r.frames.map((f) => (f.ts - r.frames[0]!.ts) >>> 0),
    [0, 960, 1920, 2880, 3840, 4800],
  );
  const tail = r.frames[5]!.bytes;
  t.equal(tail.length, 960);
  t.equal(tail[99], 1);
  t.equal(tail[100], 0, 'padded with silence');
  t.equal(pacer.playedBytes, 960 * 5 + 100, 'padding is not counted as played');
  t.notOk(pacer.isPlaying);

  // After a silence the next talkspurt keeps the RTP clock in step with wall time.
  advance(1000);
  pacer.push(Buffer.alloc(960));
  t.ok(r.frames[6]!.marker);
  t.equal(r.frames[6]!.at - r.frames[5]!.at, 1150);
  t.equal((r.frames[6]!.ts - r.frames[5]!.ts) >>> 0, 960 * Math.round(1150 / 20), 'the RTP clock moved 1150 ms too');
});

t.test('clear drops the unplayed audio and reports no stop; an underrun waits', async (t) => {
  const { clock, advance } = fakeClock();
  const r = recorder();
  const pacer = new OutputPacer(
    {
      frame: (bytes) => r.frames.push({ at: clock.now(), marker: false, ts: 0, bytes }),
      started: () => r.events.push('started'),
      stopped: () => r.events.push('stopped'),
    },
    clock,
  );
  pacer.push(Buffer.alloc(960 * 10));
  advance(70);
  t.equal(r.frames.length, 4);
  t.equal(pacer.clear(), 960 * 6);
  advance(100);
  t.equal(r.frames.length, 4);
  t.same(r.events, ['started']);

  pacer.push(Buffer.alloc(500));
  t.equal(r.frames.length, 4, 'half a frame waits for more (underrun) until end()');
  advance(40);
  pacer.push(Buffer.alloc(460));
  advance(20);
  t.equal(r.frames.length, 5);
  pacer.end();
  advance(20);
  t.same(r.events, ['started', 'started', 'stopped']);
});

t.test('a stalled event loop catches up a little, then restarts its schedule', async (t) => {
  let now = 0;
  const pending: (() => void)[] = [];
  const frames: number[] = [];
  const pacer = new OutputPacer(
    { frame: () => frames.push(now), started: () => undefined, stopped: () => undefined },
    { now: () => now, setTimeout: (fn) => pending.push(fn), clearTimeout: () => undefined },
  );
  pacer.push(Buffer.alloc(960 * 20));
  now = 50;
  pending.shift()!();
  t.same(frames, [0, 50, 50], 'two frames due by 50 ms go together');
  now = 500;
  pending.shift()!();
  t.same(frames, [0, 50, 50, 500], 'after a 450 ms stall: one frame, not a burst of 22');
});
