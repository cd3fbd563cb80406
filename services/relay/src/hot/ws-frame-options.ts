import * as ws from 'ws';

/**
 * ws's Sender.send builds every frame's options as `{ [kByteLength]: …, fin, generateMask, … }`. A literal
 * that starts with a computed key has no boilerplate: V8 reaches its shape by map transitions, which only a
 * live object keeps. A full GC while no frame is on its way (an idle spell after the first sends) frees those
 * maps, the next sends make new ones, Sender.send's feedback turns megamorphic and its optimised code defines
 * all eight properties in the runtime for the rest of the process (1–3 µs a send instead of 0.15–0.4 in a
 * loop of Sender.send). One such options object held for the life of the process keeps the maps.
 */

/** What of ws's Sender this uses: a Sender that is busy queues each frame with its options, unsent. */
interface QueueingSender {
  _state: number;
  _queue: unknown[][];
  send(data: Buffer, options: { binary: boolean; mask: boolean; compress: boolean; fin: true }): void;
}

/**
 * The ws version whose Sender this was checked against (its private `_state` and `_queue`, the options it
 * queues). test/hot/ws-frame-options.test.ts fails when the installed ws or the relay's pin is another one.
 */
export const CHECKED_WS_VERSION = '8.23.0';

let held: Record<string, unknown> | null = null;

/** The options object of one queued frame, or null if this version of ws does not queue as expected. */
export function queuedFrameOptions(): Record<string, unknown> | null {
  const Sender = (ws as unknown as { Sender?: new (socket: null) => QueueingSender }).Sender;
  if (typeof Sender !== 'function') return null;
  const sender = new Sender(null); // never attached to a socket: nothing is written
  sender._state = 1; // busy, as while it deflates: send() queues the frame with its options
  sender.send(Buffer.alloc(0), { binary: false, mask: false, compress: false, fin: true });
  const options = sender._queue?.[0]?.[3];
  return typeof options === 'object' && options !== null && 'opcode' in options ? (options as Record<string, unknown>) : null;
}

/** Holds one frame options object of ws for the life of the process (once; before the first socket opens). */
export function holdWsFrameOptions(): Record<string, unknown> | null {
  held ??= queuedFrameOptions();
  return held;
}
