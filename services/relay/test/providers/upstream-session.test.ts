import { USAGE_COUNTERS, ZERO_USAGE } from '@s2s/core';
import t, { type Test } from 'tap';
import { Audio } from '../../src/audio.js';
import { ZERO_TOKENS, type TurnDetection } from '../../src/agent/types.js';
import { DEFAULT_CONTINUITY } from '../../src/providers/shared/continuity.js';
import { UpstreamError } from '../../src/providers/shared/errors.js';
import { UpstreamSession } from '../../src/providers/shared/upstream-session.js';
import type { UpstreamConnection, UpstreamEvent } from '../../src/providers/shared/types.js';
import { UsageMeter } from '../../src/metering/usage-meter.js';

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
  const conn = new UpstreamSession(
    'local',
    new UsageMeter({ inputMsPerToken: 100, outputMsPerToken: 50 }, { provider: 'local', provider_model: 'echo-1' }),
    () => {},
    undefined,
    {
      policy: { ...DEFAULT_CONTINUITY, maxConnectionMs: 0, backoffMs: 1 },
      context: () => ({ settings: { turnDetection: opts.turnDetection }, items: [] }),
      routes: [{ provider: 'local', providerModel: 'echo-1', reopen: async () => ({ connection: second }) }],
    },
  );
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

t.test('usage is attributed to the route serving at the time; the parts add up to the totals exactly', async (t) => {
  const first = recorder();
  const second = recorder();
  const events: UpstreamEvent[] = [];
  let generation: number;
  const conn: UpstreamSession = new UpstreamSession(
    'openai',
    new UsageMeter({ inputMsPerToken: 100, outputMsPerToken: 50 }, { provider: 'openai', provider_model: 'gpt-realtime' }),
    (e) => events.push(e),
    undefined,
    {
      policy: { ...DEFAULT_CONTINUITY, maxConnectionMs: 0, attempts: 1, backoffMs: 1 },
      context: () => ({ settings: { turnDetection: null }, items: [] }),
      routes: [
        // The session's own route cannot be re-established: the session goes on on the failover route.
        { provider: 'openai', providerModel: 'gpt-realtime', reopen: async () => ({ error: new UpstreamError('openai', 'unavailable') }) },
        {
          provider: 'azure',
          providerModel: 'my-deployment',
          reopen: async () => {
            generation = conn.nextGeneration();
            return { connection: second };
          },
        },
      ],
    },
  );
  generation = conn.nextGeneration();
  conn.attach(first);
  const tokens = { ...ZERO_TOKENS, inputAudioTokens: 7, outputAudioTokens: 11, inputTextTokens: 3 };
  // 100.5 ms in and 60.5 ms out on the first route: the half milliseconds carry over to the second route's part.
  conn.appendAudio(Audio.ofPcm(Buffer.alloc(100 * 48 + 24)));
  conn.handle({ type: 'input_committed', itemKey: 'item_1', previousKey: null }, generation);
  conn.handle({ type: 'response_created', responseId: 'r1' }, generation);
  conn.handle({ type: 'audio_delta', responseId: 'r1', audio: Audio.ofPcm(Buffer.alloc(60 * 48 + 24)) }, generation);
  conn.handle({ type: 'response_done', responseId: 'r1', status: 'completed', tokens }, generation);
  t.same(conn.routes(), [{ provider: 'openai', provider_model: 'gpt-realtime', ...conn.usage() }], 'one route: the whole usage');
  conn.handle({ type: 'closed', unexpected: true }, generation);
  await new Promise((resolve) => setTimeout(resolve, 20));
  conn.appendAudio(Audio.ofPcm(Buffer.alloc(200 * 48 + 24)));
  conn.handle({ type: 'response_created', responseId: 'r2' }, generation);
  conn.handle({ type: 'audio_delta', responseId: 'r2', audio: Audio.ofPcm(Buffer.alloc(40 * 48 + 24)) }, generation);
  conn.handle(
    { type: 'response_done', responseId: 'r2', status: 'completed', tokens: { ...ZERO_TOKENS, outputTextTokens: 5 } },
    generation,
  );
  t.equal(second.audioMs(), 200.5, 'the second route heard the input after the move (nothing committed earlier was replayed)');
  const total = conn.usage();
  t.same(total, {
    audio_in_ms: 301,
    audio_out_ms: 101,
    input_audio_tokens: 7,
    input_text_tokens: 3,
    cached_input_tokens: 0,
    output_audio_tokens: 11,
    output_text_tokens: 5,
    transcribed_ms: 0,
  });
  const routes = conn.routes();
  t.same(routes, [
    {
      provider: 'openai',
      provider_model: 'gpt-realtime',
      ...ZERO_USAGE,
      audio_in_ms: 100,
      audio_out_ms: 60,
      input_audio_tokens: 7,
      input_text_tokens: 3,
      output_audio_tokens: 11,
    },
    { provider: 'azure', provider_model: 'my-deployment', ...ZERO_USAGE, audio_in_ms: 201, audio_out_ms: 41, output_text_tokens: 5 },
  ]);
  for (const k of USAGE_COUNTERS)
    t.equal(
      routes.reduce((sum, r) => sum + r[k], 0),
      total[k],
      `${k}: the parts add up to the total`,
    );
  t.ok(
    events.some((e) => e.type === 'response_done' && e.responseId === 'r2~2'),
    'the second route answered under its own names',
  );
  await conn.close();
});

t.test('UsageMeter.routes: a route serving again later is one part', async (t) => {
  const meter = new UsageMeter({ inputMsPerToken: 100, outputMsPerToken: 50 }, { provider: 'a', provider_model: 'm' });
  meter.addInput(48 * 10);
  meter.useRoute({ provider: 'b', provider_model: 'm' });
  meter.addInput(48 * 5);
  meter.useRoute({ provider: 'a', provider_model: 'm' });
  meter.addInput(48 * 2);
  t.same(
    meter.routes().map((r) => [r.provider, r.audio_in_ms]),
    [
      ['a', 12],
      ['b', 5],
    ],
  );
});
