// hot/ws-frame-options.ts reaches into ws's private Sender fields (`_state`, `_queue`): pinned here to the
// ws version it was checked against, the fields' presence and shape, and what the hold keeps.
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import t from 'tap';
import * as ws from 'ws';
import { CHECKED_WS_VERSION, holdWsFrameOptions } from '../../src/hot/ws-frame-options.js';

t.test('ws is the version the trick was checked against, and its private fields are where it expects', async (t) => {
  const installed = JSON.parse(readFileSync(createRequire(import.meta.url).resolve('ws/package.json'), 'utf8')) as { version: string };
  t.equal(installed.version, CHECKED_WS_VERSION, 'the installed ws: check hot/ws-frame-options.ts against it before moving the pin');
  const relay = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
    dependencies: Record<string, string>;
  };
  t.equal(relay.dependencies['ws'], CHECKED_WS_VERSION, 'the relay pins exactly that version');
  type Sender = { _state: unknown; _queue: unknown; send(data: Buffer, options: object): void };
  const SenderClass = (ws as unknown as { Sender: new (socket: null) => Sender }).Sender;
  t.type(SenderClass, 'function', 'ws exports its Sender');
  const sender = new SenderClass(null);
  t.equal(sender._state, 0, '_state: a number, 0 while the sender is idle');
  t.same(sender._queue, [], '_queue: an empty array');
  sender._state = 1;
  sender.send(Buffer.alloc(0), { binary: false, mask: false, compress: false, fin: true });
  const queue = sender._queue as unknown[][];
  t.equal(queue.length, 1, 'a busy sender queues the frame');
  t.equal(queue[0]?.length, 5, 'as [send step, data, compress, options, callback]');
  t.match(queue[0]?.[3], { opcode: 1, fin: true, readOnly: true }, 'the options in fourth place');
});

const moduleUrl = new URL('../../src/hot/ws-frame-options.ts', import.meta.url).href;

t.test('the held object is the options ws gives a text frame, and the same object every time', async (t) => {
  const held = holdWsFrameOptions();
  t.ok(held, 'this version of ws queues a frame with its options');
  t.same(Object.fromEntries(Object.entries(held ?? {})), {
    fin: true,
    generateMask: undefined,
    mask: false,
    maskBuffer: undefined,
    opcode: 1,
    readOnly: true,
    rsv1: false,
  });
  t.equal(Object.getOwnPropertySymbols(held).length, 1, 'with ws byte length under its own symbol');
  t.equal(holdWsFrameOptions(), held);
});

// Whether two objects share a map is V8's business: a child process with natives syntax asks it. The first
// frame's options are let go and collected (the probe) before the frame after the GC is made.
function heldMapAfterGc(): string {
  const script = `
    const { holdWsFrameOptions, queuedFrameOptions } = await import(${JSON.stringify(moduleUrl)});
    const sameMap = new Function('a', 'b', 'return %HaveSameMap(a, b)');
    const held = holdWsFrameOptions();
    const probe = new WeakRef(queuedFrameOptions());
    await new Promise((resolve) => setImmediate(resolve));
    globalThis.gc();
    const after = queuedFrameOptions();
    process.stdout.write(\`first frame's options collected: \${probe.deref() === undefined}, same map: \${sameMap(held, after)}\`);
  `;
  const r = spawnSync(process.execPath, ['--import', 'tsx', '--allow-natives-syntax', '--expose-gc', '--input-type=module', '-e', script], {
    encoding: 'utf8',
  });
  if (r.status !== 0) throw new Error(r.stderr);
  return r.stdout;
}

t.test('frames made after a full GC get the held object’s map: the shape outlives the frames', async (t) => {
  t.equal(heldMapAfterGc(), "first frame's options collected: true, same map: true");
});
