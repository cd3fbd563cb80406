import { spawnSync } from 'node:child_process';
import t from 'tap';
import { holdWsFrameOptions } from '../src/hot/ws-frame-options.js';

const moduleUrl = new URL('../src/hot/ws-frame-options.ts', import.meta.url).href;

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
