import t, { type Test } from 'tap';
import { Audio } from '../../src/audio.js';
import type { TurnDetection } from '../../src/agent-model.js';
import { DEFAULT_CONTINUITY } from '../../src/providers/continuity.js';
import { MeteredConnection } from '../../src/providers/metered-connection.js';
import type { UpstreamConnection } from '../../src/providers/types.js';
import { UsageMeter } from '../../src/providers/usage-meter.js';

/** An upstream connection that records the audio it is sent; every other request is ignored. */
function recorder(): UpstreamConnection & { audioMs: () => number; heard: () => Buffer } {
  let bytes = 0;
  const pcm: Buffer[] = [];
  const noop = () => {};
  return {
    appendAudio: (a: Audio) => {
      bytes += a.bytes;
      pcm.push(a.pcm);
    },
    commit: noop,
    clear: noop,
    createResponse: noop,
    cancelResponse: noop,
    updateSession: noop,
    createItem: noop,
    deleteItem: noop,
    truncateItem: noop,
    clearOutputAudio: noop,
    close: async () => {},
    audioMs: () => bytes / 48,
    heard: () => Buffer.concat(pcm),
  };
}

/**
 * A connection with continuity whose upstream is lost after `frames` of 100 ms: how much of the input
 * since the last commit does the next connection hear again?
 */
async function replayedAfterLoss(
  t: Test,
  opts: { turnDetection: TurnDetection; speech: boolean; frames: number; frame?: (i: number) => Audio },
): Promise<number> {
  const first = recorder();
  const second = recorder();
  const conn = new MeteredConnection('local', new UsageMeter({ inputMsPerToken: 100, outputMsPerToken: 50 }), () => {}, undefined, {
    policy: { ...DEFAULT_CONTINUITY, maxConnectionMs: 0, backoffMs: 1 },
    context: () => ({ settings: { turnDetection: opts.turnDetection }, items: [] }),
    routes: [{ provider: 'local', providerModel: 'echo-1', reopen: async () => ({ connection: second }) }],
  });
  const generation = conn.nextGeneration();
  conn.attach(first);
  if (opts.speech) conn.handle({ type: 'speech_started', audioStartMs: 0 }, generation);
  const frame = Audio.ofPcm(Buffer.alloc(100 * 48));
  for (let i = 0; i < opts.frames; i++) conn.appendAudio(opts.frame?.(i) ?? frame);
  conn.handle({ type: 'closed', unexpected: true }, generation);
  await new Promise((resolve) => setTimeout(resolve, 20));
  t.equal(first.audioMs(), opts.frames * 100, 'the first connection heard every frame');
  const kept = second.audioMs() * 48;
  t.ok(
    second.heard().equals(first.heard().subarray(first.heard().length - kept)),
    'the next one heard the newest of them again, as they were',
  );
  return second.audioMs();
}

t.test('a turn under way is heard again whole by the next connection', async (t) => {
  t.equal(await replayedAfterLoss(t, { turnDetection: { type: 'server_vad' }, speech: true, frames: 100 }), 10_000);
});

t.test('manual turns: everything since the last commit is the turn, heard again whole', async (t) => {
  t.equal(await replayedAfterLoss(t, { turnDetection: null, speech: false, frames: 100 }), 10_000);
});

t.test('an open microphone in silence keeps only the idle tail, not 30 s per session', async (t) => {
  const ms = await replayedAfterLoss(t, { turnDetection: { type: 'server_vad' }, speech: false, frames: 100 });
  t.equal(ms, DEFAULT_CONTINUITY.idleUncommittedBytes / 48);
});

t.test('the whole-turn bound still holds', async (t) => {
  const ms = await replayedAfterLoss(t, { turnDetection: { type: 'server_vad' }, speech: true, frames: 400 });
  t.equal(ms, DEFAULT_CONTINUITY.maxUncommittedBytes / 48);
});

t.test('the turn replayed is the very audio appended, base64 frames of all sizes included', async (t) => {
  // Frames of 100 ms whose bytes tell them apart, as base64 (the hot path) or as bytes, 40 s of them.
  const frame = (i: number) => {
    const pcm = Buffer.alloc(100 * 48, i % 251);
    pcm.writeUInt32LE(i, 0);
    return i % 3 === 0 ? Audio.ofPcm(pcm) : Audio.ofCheckedBase64(pcm.toString('base64'), pcm.length);
  };
  const ms = await replayedAfterLoss(t, { turnDetection: null, speech: false, frames: 400, frame });
  t.equal(ms, DEFAULT_CONTINUITY.maxUncommittedBytes / 48);
});
