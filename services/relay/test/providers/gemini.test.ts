import { bytesOf, DOWN_24K_TO_16K, Resampler, resampledCount, samplesOf } from '@s2s/audio';
import { usageOf } from '@s2s/core';
import { VoiceActivityType } from '@google/genai';
import t, { type Test } from 'tap';
import { pcmFrames, pcmTone } from '@s2s/local-provider';
import {
  GeminiLiveAdapter,
  ProviderBase,
  UpstreamError,
  type MeteredUpstream,
  type UpstreamSessionConfig,
} from '../../src/providers/index.js';
import { Events, adapterSuite, type UpstreamHarness } from './adapter-suite.js';
import {
  FAKE_GEMINI_PROMPT_TEXT_TOKENS,
  FAKE_GEMINI_REPLY,
  fakeGeminiTokens,
  fakeGeminiUsage,
  geminiTokens,
  startFakeGemini,
  textTokens,
  type FakeGemini,
  type FakeGeminiOptions,
} from './fake-gemini.js';
import { Audio } from '../../src/audio.js';

interface GeminiHarness extends UpstreamHarness {
  fake: FakeGemini;
}

async function harness(opts: FakeGeminiOptions): Promise<GeminiHarness> {
  const fake = await startFakeGemini(opts);
  return {
    fake,
    adapter: new GeminiLiveAdapter({ url: fake.url, apiKey: opts.apiKey }),
    address: `127.0.0.1:${fake.port}`,
    handshakes: () => fake.handshakes.length,
    drop: () => fake.drop(),
    expire: (ms) => fake.goAway(ms),
    refuse: (refusing) => fake.setRefusing(refusing),
    close: () => fake.close(),
  };
}

/** 24 kHz PCM16 as the adapter sends it to Gemini: `@s2s/audio`'s resampler, stateful across pushes. */
function to16k(): (pcm: Buffer) => Buffer {
  const r = new Resampler(DOWN_24K_TO_16K);
  return (pcm) => Buffer.from(bytesOf(r.push(samplesOf(pcm))));
}

/** The reference: one resampler fed the whole signal, which frame-by-frame feeding must match exactly. */
function resampleWhole(pcm: Buffer): Buffer {
  return to16k()(pcm);
}

/** Samples at 16 kHz after `inputSamples` at 24 kHz. */
const resampledLength = (inputSamples: number) => resampledCount(inputSamples, DOWN_24K_TO_16K.up, DOWN_24K_TO_16K.down);

adapterSuite(t, {
  name: 'gemini',
  start: ({ apiKey, paced, resumable, capMs }) =>
    harness({ apiKey, paced, ...(resumable ? { resumption: true } : {}), ...(capMs ? { capMs } : {}) }),
  adapterFor: (h, url, apiKey) => new GeminiLiveAdapter({ url: url ?? h!.fake.url, apiKey }),
  checkSession(t, h, config: UpstreamSessionConfig, apiKey) {
    t.same(h.fake.handshakes[0], { apiKeyHeader: apiKey, search: '' }, 'key in the x-goog-api-key header, nothing in the URL');
    t.same(
      h.fake.messages[0],
      {
        setup: {
          model: `models/${config.providerModel}`,
          generationConfig: {
            responseModalities: ['AUDIO'],
            speechConfig: { voiceConfig: { prebuiltVoiceConfig: { voiceName: 'Puck' } } },
          },
          realtimeInputConfig: { automaticActivityDetection: { disabled: false } },
          outputAudioTranscription: {},
          sessionResumption: {},
          contextWindowCompression: { slidingWindow: {} },
        },
      },
      'setup; an unknown voice maps to Puck; the spoken output is transcribed; resumable, compressed context',
    );
  },
  checkInputAudio(t, h, sent) {
    const got = h.fake.audio();
    const inSamples = sent.length / 2;
    t.equal(got.length / 2, resampledLength(inSamples), '2/3 of the samples');
    t.ok(Math.abs(got.length / 2 - (inSamples * 2) / 3) <= 1, 'within one sample of 2/3');
    t.ok(got.equals(resampleWhole(sent)), 'frame by frame equals the whole signal resampled: no seams');
    t.ok(h.fake.mimeTypes.every((m) => m === 'audio/pcm;rate=16000'));
    t.same(
      h.fake.messages.slice(1).filter((m) => !m.realtimeInput?.audio),
      [{ realtimeInput: { audioStreamEnd: true } }],
      'commit → audioStreamEnd, once',
    );
  },
  expectedReply: (sent) => {
    const inMs = Math.floor(resampledLength(sent.length / 2) / 16);
    return { pcm: FAKE_GEMINI_REPLY, usage: { input_audio_tokens: geminiTokens(inMs), output_audio_tokens: geminiTokens(1000) } };
  },
  agentScript: true,
  checkResumed(t, h) {
    // Gemini resumes with the newest handle it gave: one after setupComplete, one after the turn completed.
    t.same(h.fake.resumedWith, ['handle_2'], "the second connection's setup carries the newest resumption handle");
    t.same(h.fake.messages.filter((m) => m.clientContent).length, 0, 'nothing replayed: Gemini keeps the conversation itself');
  },
  checkBargeIn(t, h) {
    // Gemini has no cancel message: nothing but audio and stream ends went upstream.
    t.ok(
      h.fake.messages.slice(1).every((m) => m.realtimeInput),
      'only realtimeInput after setup',
    );
  },
});

/** The turn-level events (items, parts and transcripts left out). */
const TURN_EVENTS = new Set(['response_created', 'audio_delta', 'audio_done', 'speech_started', 'response_done']);
const turnEvents = (ev: Events) => ev.all.filter((e) => TURN_EVENTS.has(e.type)).map((e) => e.type);

const SESSION: UpstreamSessionConfig = {
  providerModel: 'gemini-live-x',
  voice: 'kore',
  turnDetection: { type: 'server_vad', silenceDurationMs: 700 },
};

async function open(
  t: Test,
  opts: FakeGeminiOptions,
  config: UpstreamSessionConfig = SESSION,
): Promise<{ fake: FakeGemini; ev: Events; up: MeteredUpstream }> {
  const fake = await startFakeGemini(opts);
  t.teardown(() => fake.close());
  const ev = new Events();
  const up = await new ProviderBase(new GeminiLiveAdapter({ url: fake.url, apiKey: opts.apiKey }), { retries: 0 }).open(
    config,
    ev.push,
    new AbortController().signal,
  );
  t.teardown(() => up.close());
  return { fake, ev, up };
}

t.test('gemini: voice and silence duration go into the setup; model names already prefixed are kept', async (t) => {
  const { fake } = await open(t, { apiKey: 'k-1' });
  t.same(fake.messages[0]!.setup!.generationConfig!.speechConfig!.voiceConfig!.prebuiltVoiceConfig!.voiceName, 'Kore');
  t.same(fake.messages[0]!.setup!.realtimeInputConfig, { automaticActivityDetection: { disabled: false, silenceDurationMs: 700 } });
  const fake2 = await startFakeGemini({ apiKey: 'k' });
  t.teardown(() => fake2.close());
  const up = await new ProviderBase(new GeminiLiveAdapter({ url: fake2.url, apiKey: 'k' })).open(
    { providerModel: 'models/m-2' },
    () => {},
    new AbortController().signal,
  );
  t.equal(fake2.messages[0]!.setup!.model, 'models/m-2');
  await up.close();
});

t.test('gemini: usage arriving after turnComplete is still attributed to that response', async (t) => {
  const { ev, up } = await open(t, { apiKey: 'k', usage: 'after' });
  for (const f of pcmFrames(pcmTone(500))) up.appendAudio(Audio.ofPcm(f));
  up.commit();
  const done = await ev.wait('response_done');
  t.same(done.tokens, fakeGeminiTokens(500, 1000));
});

t.test('gemini: no usage at all → response_done without usage, tokens by the 32/s ratio', async (t) => {
  const { ev, up } = await open(t, { apiKey: 'k', usage: 'none' });
  for (const f of pcmFrames(pcmTone(500))) up.appendAudio(Audio.ofPcm(f));
  up.createResponse();
  const done = await ev.wait('response_done');
  t.equal(done.tokens, null);
  t.same(done.metered, usageOf({ audio_in_ms: 500, audio_out_ms: 1000, input_audio_tokens: 16, output_audio_tokens: 32 }));
});

t.test(
  "gemini: input during an answer → interrupted: speech_started, a cancelled response with Gemini's usage; goAway → closed",
  async (t) => {
    const { fake, ev, up } = await open(t, { apiKey: 'k', paced: true });
    for (const f of pcmFrames(pcmTone(200))) up.appendAudio(Audio.ofPcm(f));
    up.commit();
    await ev.wait('audio_delta');
    up.appendAudio(Audio.ofPcm(pcmTone(20)));
    const done = await ev.wait('response_done');
    t.same(
      turnEvents(ev),
      ['response_created', 'audio_delta', 'speech_started', 'response_done'],
      'no audio_done: an interrupted turn has no generationComplete',
    );
    t.same(await ev.wait('speech_started'), { type: 'speech_started', audioStartMs: 220 });
    t.equal(done.status, 'cancelled');
    t.same(done.tokens, fakeGeminiTokens(200, 200), 'what Gemini reported for the turn');
    // Without a resumption handle, the end Gemini announces is the end of the session.
    fake.goAway(0);
    t.same(await ev.wait('closed'), { type: 'closed', unexpected: true });
  },
);

t.test('gemini: a barge-in keeps the usage Gemini reports for the cancelled turn (never the ratio)', async (t) => {
  const { fake, ev, up } = await open(t, { apiKey: 'k', paced: true });
  for (const f of pcmFrames(pcmTone(500))) up.appendAudio(Audio.ofPcm(f));
  up.commit();
  const first = await ev.wait('audio_delta');
  up.cancelResponse(first.responseId, 20);
  const done = await ev.wait('response_done');
  t.equal(done.status, 'cancelled');
  t.same(turnEvents(ev), ['response_created', 'audio_delta', 'response_done'], 'nothing of the turn after the barge-in reaches the relay');
  t.same(
    ev.all.filter((e) => e.type === 'audio_transcript_delta').map((e) => e.type === 'audio_transcript_delta' && e.delta),
    ['a tone '],
    'nor of its transcript',
  );
  t.match(await ev.wait('output_item_done'), {
    item: { type: 'message', status: 'incomplete', content: [{ type: 'output_audio', transcript: 'a tone ' }] },
  });
  // Gemini generated the whole second of audio before its turn ended: it bills all of it, and so do we.
  t.same(done.tokens, fakeGeminiTokens(500, 1000), 'by modality, the prompt text included');
  const reported = fakeGeminiTokens(500, 1000);
  t.same(done.metered, {
    audio_in_ms: 500,
    audio_out_ms: 200,
    input_audio_tokens: geminiTokens(500),
    input_text_tokens: reported.inputTextTokens,
    cached_input_tokens: reported.cachedInputTokens,
    output_audio_tokens: geminiTokens(1000),
    output_text_tokens: reported.outputTextTokens,
    transcribed_ms: reported.transcribedMs,
  });
  t.equal(fake.messages.filter((m) => m.realtimeInput?.audioStreamEnd).length, 1, 'no cancel message went up: Gemini has none');
});

t.test('gemini: output audio ends at generationComplete, the response at turnComplete', async (t) => {
  const { fake, ev } = await open(t, { apiKey: 'k' });
  const part = pcmTone(100);
  fake.broadcast({
    serverContent: { modelTurn: { parts: [{ inlineData: { mimeType: 'audio/pcm;rate=24000', data: part.toString('base64') } }] } },
  });
  fake.broadcast({ serverContent: { generationComplete: true } });
  const audioDone = await ev.wait('audio_done');
  t.same(turnEvents(ev), ['response_created', 'audio_delta', 'audio_done'], 'audio_done before Gemini ends the turn');
  // Output after generationComplete (none is expected) is not passed on: the audio has ended.
  fake.broadcast({
    serverContent: { modelTurn: { parts: [{ inlineData: { mimeType: 'audio/pcm;rate=24000', data: part.toString('base64') } }] } },
  });
  fake.broadcast({ serverContent: { turnComplete: true }, usageMetadata: fakeGeminiUsage(0, 100) });
  const done = await ev.wait('response_done');
  t.equal(done.responseId, audioDone.responseId);
  t.equal(done.status, 'completed');
  t.equal(ev.all.filter((e) => e.type === 'audio_done').length, 1, 'once');
  t.equal(ev.all.filter((e) => e.type === 'audio_delta').length, 1);
});

t.test('gemini: several usage reports in one turn are snapshots: the last one counts, never their sum', async (t) => {
  const { fake, ev } = await open(t, { apiKey: 'k' });
  const part = pcmTone(100);
  fake.broadcast({
    serverContent: { modelTurn: { parts: [{ inlineData: { mimeType: 'audio/pcm;rate=24000', data: part.toString('base64') } }] } },
    usageMetadata: fakeGeminiUsage(300, 50),
  });
  fake.broadcast({ usageMetadata: fakeGeminiUsage(300, 100) });
  fake.broadcast({ serverContent: { generationComplete: true } });
  fake.broadcast({ serverContent: { turnComplete: true } });
  const done = await ev.wait('response_done');
  t.same(done.tokens, fakeGeminiTokens(300, 100));
});

t.test('gemini: a turn Gemini completes without any output is still a response, billed as reported', async (t) => {
  const { fake, ev } = await open(t, { apiKey: 'k' });
  fake.broadcast({ serverContent: { turnComplete: true }, usageMetadata: fakeGeminiUsage(400, 0) });
  const done = await ev.wait('response_done');
  t.same(
    ev.all.map((e) => e.type),
    ['response_created', 'response_done'],
  );
  t.same(done.tokens, fakeGeminiTokens(400, 0));
  t.equal(done.status, 'completed');
});

t.test('gemini: manual turns frame the input with activityStart / activityEnd', async (t) => {
  const manual = { providerModel: 'm', turnDetection: null } as unknown as UpstreamSessionConfig;
  const { fake, ev, up } = await open(t, { apiKey: 'k' }, manual);
  t.same(fake.messages[0]!.setup!.realtimeInputConfig, { automaticActivityDetection: { disabled: true } });
  for (const f of pcmFrames(pcmTone(200))) up.appendAudio(Audio.ofPcm(f));
  up.commit();
  await ev.wait('response_done');
  const control = fake.messages.slice(1).filter((m) => !m.realtimeInput?.audio);
  t.same(control, [{ realtimeInput: { activityStart: {} } }, { realtimeInput: { activityEnd: {} } }]);
  t.equal(fake.messages[1]!.realtimeInput!.activityStart !== undefined, true, 'activityStart before the first audio');
});

t.test('gemini: a mid-session change to what the setup fixed is refused with the field named; the same value is accepted', async (t) => {
  const { fake, ev, up } = await open(t, { apiKey: 'k' });
  up.updateSession({ voice: 'KORE' });
  await ev.wait('session_updated');
  up.updateSession({ voice: 'Puck' });
  t.same(await ev.wait('error'), {
    type: 'error',
    message: 'Gemini Live fixes the voice when the session opens: it cannot change mid-session.',
    fatal: false,
    request: 'update_session',
    param: 'voice',
  });
  up.updateSession({ turnDetection: { type: 'server_vad', silenceDurationMs: 900 } });
  t.equal((await ev.wait('error', (e) => e.param !== 'voice')).param, 'turnDetection');
  t.equal(fake.messages.length, 1, 'nothing but the setup went upstream');
  // Instructions and tools are what Gemini takes after setup: a contextUpdate, then session_updated.
  const mark = ev.all.length;
  up.updateSession({ voice: 'kore', instructions: 'Be brief.', tools: [] });
  await ev.wait('session_updated', () => true, mark);
  t.equal(ev.all.filter((e) => e.type === 'error').length, 2, 'accepted');
  while (fake.messages.length < 2) await new Promise((resolve) => setTimeout(resolve, 5));
  t.same(fake.messages[1], { contextUpdate: { systemInstruction: { parts: [{ text: 'Be brief.' }] }, tools: { tools: [] } } });
});

t.test('gemini: an upstream dropping the connection reports a fatal error, then closed', async (t) => {
  const { fake, ev } = await open(t, { apiKey: 'k' });
  fake.drop();
  await ev.wait('closed');
  t.same(ev.all, [
    { type: 'error', message: 'provider gemini closed the session (code 1006)', fatal: true },
    { type: 'closed', unexpected: true },
  ]);
});

t.test('gemini: a key refused with HTTP 403 or a close before setupComplete is unauthorized, and not echoed', async (t) => {
  for (const refuse of ['http', 'close'] as const) {
    const fake = await startFakeGemini({ apiKey: 'right', refuse });
    t.teardown(() => fake.close());
    const err = await new ProviderBase(new GeminiLiveAdapter({ url: fake.url, apiKey: 'wrong-secret-key' }), { retries: 2, backoffMs: 1 })
      .open({ providerModel: 'm' }, () => {}, new AbortController().signal)
      .catch((e: unknown) => e);
    t.ok(err instanceof UpstreamError, refuse);
    t.equal((err as UpstreamError).kind, 'unauthorized', refuse);
    t.equal(fake.handshakes.length, 1, `${refuse}: not retried`);
    t.notMatch((err as Error).message, 'wrong-secret-key');
  }
});

t.test('gemini live API (GEMINI_API_KEY)', { skip: !process.env.GEMINI_API_KEY && 'GEMINI_API_KEY is not set' }, async (t) => {
  const ev = new Events();
  const up = await new ProviderBase(new GeminiLiveAdapter({ apiKey: process.env.GEMINI_API_KEY! }), { connectTimeoutMs: 15_000 }).open(
    { providerModel: process.env.GEMINI_LIVE_MODEL ?? 'gemini-live-2.5-flash-preview' },
    ev.push,
    new AbortController().signal,
  );
  t.teardown(() => up.close());
  for (const f of pcmFrames(pcmTone(1500))) up.appendAudio(Audio.ofPcm(f));
  up.commit();
  const done = await ev.wait('response_done');
  t.ok(['completed', 'cancelled'].includes(done.status), 'a response came back');
  t.equal(up.usage().audio_in_ms, 1500);
});

const AGENT: UpstreamSessionConfig = {
  providerModel: 'gemini-live-x',
  voice: 'Aoede',
  instructions: 'You are a weather agent.',
  tools: [{ name: 'weather', description: 'Weather by city', parameters: { type: 'object', properties: { city: { type: 'string' } } } }],
  turnDetection: { type: 'server_vad' },
  inputTranscription: {},
};

t.test(
  'gemini: an audio turn becomes a user item with its transcript, the answer an assistant item with audio and transcript',
  async (t) => {
    const { fake, ev, up } = await open(t, { apiKey: 'k' }, AGENT);
    t.match(fake.messages[0]!.setup, {
      systemInstruction: { parts: [{ text: 'You are a weather agent.' }] },
      tools: [{ functionDeclarations: [{ name: 'weather' }] }],
      inputAudioTranscription: {},
      outputAudioTranscription: {},
    });
    for (const f of pcmFrames(pcmTone(600))) up.appendAudio(Audio.ofPcm(f));
    up.commit();
    const done = await ev.wait('response_done');
    const inMs = Math.floor(resampledLength(600 * 24) / 16);
    const user = 'gemini_item_1';
    const userItem = { type: 'message', role: 'user', status: 'completed', content: [{ type: 'input_audio', transcript: null }] };
    const assistantItem = {
      type: 'message',
      role: 'assistant',
      status: 'completed',
      content: [{ type: 'output_audio', transcript: 'a tone of a second' }],
    };
    const ref = { responseId: done.responseId, itemKey: 'gemini_item_2', outputIndex: 0 };
    t.same(
      ev.all.filter((e) => e.type !== 'audio_delta'),
      [
        { type: 'input_committed', itemKey: user, previousKey: null },
        { type: 'item_added', itemKey: user, previousKey: null, item: userItem },
        { type: 'item_done', itemKey: user, item: userItem },
        { type: 'input_transcript_delta', itemKey: user, contentIndex: 0, delta: 'speech ' },
        { type: 'input_transcript_delta', itemKey: user, contentIndex: 0, delta: `${inMs} ms` },
        { type: 'input_transcript_completed', itemKey: user, contentIndex: 0, transcript: `speech ${inMs} ms` },
        { type: 'response_created', responseId: done.responseId },
        { type: 'output_item_added', ...ref, item: { type: 'message', role: 'assistant', status: 'in_progress', content: [] } },
        {
          type: 'item_added',
          itemKey: ref.itemKey,
          previousKey: user,
          item: { type: 'message', role: 'assistant', status: 'in_progress', content: [] },
        },
        { type: 'content_part_added', ...ref, contentIndex: 0, part: { type: 'output_audio', transcript: '' } },
        { type: 'audio_transcript_delta', ...ref, contentIndex: 0, delta: 'a tone ' },
        { type: 'audio_transcript_delta', ...ref, contentIndex: 0, delta: 'of a second' },
        { type: 'audio_done', responseId: ref.responseId, itemKey: ref.itemKey, outputIndex: 0, contentIndex: 0 },
        { type: 'audio_transcript_done', ...ref, contentIndex: 0, transcript: 'a tone of a second' },
        { type: 'content_part_done', ...ref, contentIndex: 0, part: { type: 'output_audio', transcript: 'a tone of a second' } },
        { type: 'output_item_done', ...ref, item: assistantItem },
        { type: 'item_done', itemKey: ref.itemKey, item: assistantItem },
        { ...done },
      ],
    );
    t.ok(
      ev.all.every((e) => e.type !== 'audio_delta' || (e.itemKey === ref.itemKey && e.outputIndex === 0 && e.contentIndex === 0)),
      'audio deltas are placed in the item',
    );
    t.same(done.tokens, { ...fakeGeminiTokens(inMs, 1000), transcribedMs: 600 }, 'the transcribed audio is counted');
  },
);

t.test('gemini: tool round trip — a text turn, a function call under a gateway call id, the output, the spoken result', async (t) => {
  const { fake, ev, up } = await open(t, { apiKey: 'k' }, AGENT);
  up.createItem(
    'item_user1',
    { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'call weather {"city":"Paris"}' }] },
    null,
  );
  await ev.wait('item_done');
  t.same(fake.messages.length, 1, 'a text item waits for the response');
  up.createResponse();
  const callDone = await ev.wait('function_call_arguments_done');
  t.match(callDone.callId, /^call_[0-9A-Za-z]{20}$/, "the gateway's call id, not Gemini's");
  t.equal(callDone.name, 'weather');
  t.equal(callDone.arguments, '{"city":"Paris"}');
  const first = await ev.wait('response_done');
  t.equal(first.status, 'completed');
  t.same(
    first.tokens,
    { inputAudioTokens: 0, inputTextTokens: 0, cachedInputTokens: 0, outputAudioTokens: 0, outputTextTokens: 0, transcribedMs: 0 },
    'reported with the turn that continues it',
  );
  t.match(
    ev.all.find((e) => e.type === 'output_item_done'),
    { item: { type: 'function_call', status: 'completed', callId: callDone.callId, name: 'weather', arguments: '{"city":"Paris"}' } },
  );
  t.same(fake.messages.slice(1), [
    { clientContent: { turns: [{ role: 'user', parts: [{ text: 'call weather {"city":"Paris"}' }] }], turnComplete: false } },
    { clientContent: { turnComplete: true } },
  ]);

  const mark = ev.all.length;
  up.createItem('item_out1', { type: 'function_call_output', callId: callDone.callId, output: '{"sky":"clear"}' }, callDone.itemKey);
  t.match(await ev.wait('item_added', () => true, mark), {
    itemKey: 'item_out1',
    previousKey: callDone.itemKey,
    item: { type: 'function_call_output', callId: callDone.callId },
  });
  up.createResponse();
  const second = await ev.wait('response_done', (e) => e.responseId !== first.responseId);
  t.same(
    fake.messages.at(-1),
    { toolResponse: { functionResponses: [{ id: 'fc_1', name: 'weather', response: { sky: 'clear' } }] } },
    "Gemini's id and name",
  );
  const transcript = await ev.wait('audio_transcript_done', (e) => e.responseId === second.responseId);
  t.equal(transcript.transcript, '{"sky":"clear"}', 'the result, spoken');
  t.same(second.tokens, {
    inputAudioTokens: 0,
    inputTextTokens: FAKE_GEMINI_PROMPT_TEXT_TOKENS + textTokens('{"sky":"clear"}'),
    cachedInputTokens: FAKE_GEMINI_PROMPT_TEXT_TOKENS + textTokens('call weather {"city":"Paris"}'),
    outputAudioTokens: geminiTokens(1000),
    outputTextTokens: 0,
    transcribedMs: 0,
  });
});

t.test('gemini: text output — text deltas in an output_text part, billed as text', async (t) => {
  const { fake, ev, up } = await open(t, { apiKey: 'k' }, { providerModel: 'm', outputModalities: ['text'] });
  t.same(fake.messages[0]!.setup!.generationConfig, { responseModalities: ['TEXT'] });
  up.createItem('item_a', { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'hello there' }] }, null);
  up.createResponse();
  const done = await ev.wait('response_done');
  t.same(
    ev.all.filter((e) => e.type === 'text_delta').map((e) => e.type === 'text_delta' && e.delta),
    ['hello ', 'there'],
  );
  t.match(await ev.wait('text_done'), { text: 'hello there', contentIndex: 0 });
  t.match(await ev.wait('output_item_done'), {
    item: { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'hello there' }] },
  });
  t.notOk(
    ev.all.some((e) => e.type === 'audio_delta' || e.type === 'audio_done'),
    'no audio',
  );
  t.same(done.tokens, {
    inputAudioTokens: 0,
    inputTextTokens: FAKE_GEMINI_PROMPT_TEXT_TOKENS + textTokens('hello there'),
    cachedInputTokens: 0,
    outputAudioTokens: 0,
    outputTextTokens: textTokens('hello there'),
    transcribedMs: 0,
  });
});

t.test('gemini: items it cannot place or answer are refused, and nothing goes upstream', async (t) => {
  const { fake, ev, up } = await open(t, { apiKey: 'k' }, AGENT);
  up.createItem('item_x', { type: 'function_call_output', callId: 'call_unknown', output: '1' }, null);
  t.match(await ev.wait('error'), { fatal: false, request: 'create_item' });
  up.createItem('item_y', { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'hi' }] }, 'item_elsewhere');
  await ev.wait('error', (e) => e.message.includes('appends'));
  up.createItem('item_z', { type: 'message', role: 'system', content: [{ type: 'input_text', text: 'be terse' }] }, null);
  await ev.wait('error', (e) => e.message.includes('user text'));
  t.equal(fake.messages.length, 1, 'only the setup');
  t.notOk(ev.all.some((e) => e.type === 'item_added'));
});

t.test(
  'gemini: goAway with a resumption handle moves the session to a new connection at a quiet moment; the relay sees nothing',
  async (t) => {
    const { fake, ev, up } = await open(t, { apiKey: 'k', resumption: true });
    for (const f of pcmFrames(pcmTone(300))) up.appendAudio(Audio.ofPcm(f));
    up.commit();
    await ev.wait('response_done');
    fake.goAway(5000);
    // Sent before the adapter hears of the goAway: the old connection answers it, then the switch happens.
    const second = pcmTone(400);
    for (const f of pcmFrames(second)) up.appendAudio(Audio.ofPcm(f));
    up.commit();
    const done = await ev.wait('response_done', (e) => e.responseId === 'gemini_resp_2');
    t.equal(done.status, 'completed');
    while (fake.resumedWith.length === 0) await new Promise((resolve) => setTimeout(resolve, 5));
    t.same(fake.resumedWith, ['handle_3'], 'resumed from the handle given after the second turn');
    t.equal(fake.handshakes.length, 2, 'one new connection');
    const third = pcmTone(200);
    for (const f of pcmFrames(third)) up.appendAudio(Audio.ofPcm(f));
    up.commit();
    t.equal((await ev.wait('response_done', (e) => e.responseId === 'gemini_resp_3')).status, 'completed', 'the session goes on');
    t.notOk(
      ev.all.some((e) => e.type === 'closed' || e.type === 'error'),
      'no close, no error',
    );
    t.ok(fake.audio().equals(resampleWhole(Buffer.concat([pcmTone(300), second, third]))), 'every input byte arrived once, in order');
    t.equal(up.usage().audio_in_ms, 900);
  },
);

t.test('gemini: goAway during an answer: the answer is finished first, then the switch', async (t) => {
  const { fake, ev, up } = await open(t, { apiKey: 'k', resumption: true, paced: true });
  for (const f of pcmFrames(pcmTone(300))) up.appendAudio(Audio.ofPcm(f));
  up.commit();
  await ev.wait('audio_delta');
  fake.goAway(5000);
  const done = await ev.wait('response_done');
  t.equal(done.status, 'completed', 'not cut');
  t.same(done.tokens, fakeGeminiTokens(300, 1000));
  t.ok(ev.deltas(done.responseId).equals(FAKE_GEMINI_REPLY), 'the whole answer');
  while (fake.resumedWith.length === 0) await new Promise((resolve) => setTimeout(resolve, 5));
  t.same(fake.resumedWith, ['handle_2']);
});

t.test('gemini: a lost connection is resumed; the answer in flight is reported failed, its input sent again', async (t) => {
  const { fake, ev, up } = await open(t, { apiKey: 'k', resumption: true, paced: true });
  const first = pcmTone(300);
  for (const f of pcmFrames(first)) up.appendAudio(Audio.ofPcm(f));
  up.commit();
  await ev.wait('audio_delta');
  fake.drop();
  // Sent while the adapter has not yet noticed: it must not be lost either.
  const more = pcmTone(100);
  for (const f of pcmFrames(more)) up.appendAudio(Audio.ofPcm(f));
  const failed = await ev.wait('response_done');
  t.equal(failed.status, 'failed');
  t.equal(failed.tokens, null);
  t.same(
    failed.metered,
    usageOf({ audio_in_ms: 400, audio_out_ms: 200, input_audio_tokens: geminiTokens(400), output_audio_tokens: geminiTokens(200) }),
  );
  // The resumed session (as of the handle given at setup) gets the turn's input again, and answers it.
  const again = await ev.wait('response_done', (e) => e.responseId !== failed.responseId);
  t.equal(again.status, 'completed');
  t.same(fake.resumedWith, ['handle_1']);
  const firstUp = resampleWhole(first);
  t.ok(
    fake
      .audio()
      .subarray(firstUp.length, 2 * firstUp.length)
      .equals(firstUp),
    'the first turn, sent again on the new connection',
  );
  t.notOk(ev.all.some((e) => e.type === 'closed' || e.type === 'error'));
});

t.test('gemini: when the session cannot be resumed, it fails like any lost upstream', async (t) => {
  const { fake, ev } = await open(t, { apiKey: 'k', resumption: true });
  fake.setRefusing(true);
  fake.drop();
  const closed = await ev.wait('closed');
  t.same(closed, { type: 'closed', unexpected: true });
  t.same(ev.all, [{ type: 'error', message: 'provider gemini could not resume the session', fatal: true }, closed]);
  t.equal(fake.handshakes.length, 4, 'three attempts after the first connection');
});

t.test("gemini: Gemini's voice activity signals are speech_started / speech_stopped, and the utterance becomes an item", async (t) => {
  const { fake, ev, up } = await open(t, { apiKey: 'k' });
  for (const f of pcmFrames(pcmTone(200))) up.appendAudio(Audio.ofPcm(f));
  fake.broadcast({ voiceActivity: { voiceActivityType: VoiceActivityType.ACTIVITY_START } });
  await ev.wait('speech_started');
  // An interruption during the same utterance is no second start of speech.
  fake.broadcast({ serverContent: { interrupted: true } });
  fake.broadcast({ voiceActivity: { voiceActivityType: VoiceActivityType.ACTIVITY_END } });
  await ev.wait('item_done');
  t.same(
    ev.all.map((e) => e.type),
    ['speech_started', 'speech_stopped', 'input_committed', 'item_added', 'item_done'],
  );
  t.same(ev.all[1], { type: 'speech_stopped', audioEndMs: 200 });
  t.match(ev.all[2], { type: 'input_committed', itemKey: 'gemini_item_1', previousKey: null });
});

t.test('gemini: audio merely streaming (no answer asked) does not hold a planned switch back; it is sent again', async (t) => {
  const { fake, ev, up } = await open(t, { apiKey: 'k', resumption: true });
  for (const f of pcmFrames(pcmTone(300))) up.appendAudio(Audio.ofPcm(f));
  up.commit();
  await ev.wait('response_done');
  const streamed = pcmTone(200, { frequencyHz: 300 });
  const resample = to16k();
  resample(pcmTone(300));
  const streamedUp = resample(streamed);
  for (const f of pcmFrames(streamed)) up.appendAudio(Audio.ofPcm(f));
  fake.goAway(5000);
  while (fake.resumedWith.length === 0) await new Promise((resolve) => setTimeout(resolve, 5));
  t.same(fake.resumedWith, ['handle_2']);
  while (fake.audio().length < resampleWhole(pcmTone(300)).length + 2 * streamedUp.length)
    await new Promise((resolve) => setTimeout(resolve, 5));
  t.ok(fake.audio().subarray(-streamedUp.length).equals(streamedUp), 'the streamed audio, sent again to the new connection');
  t.notOk(
    ev.all.some((e) => e.type === 'closed' || e.type === 'error' || (e.type === 'response_created' && e.responseId === 'gemini_resp_2')),
  );
});

t.test(
  'gemini live API (GEMINI_API_KEY): instructions, a text turn, transcripts, usage by modality',
  { skip: !process.env.GEMINI_API_KEY && 'GEMINI_API_KEY is not set' },
  async (t) => {
    const ev = new Events();
    const up = await new ProviderBase(new GeminiLiveAdapter({ apiKey: process.env.GEMINI_API_KEY! }), { connectTimeoutMs: 15_000 }).open(
      {
        providerModel: process.env.GEMINI_LIVE_MODEL ?? 'gemini-live-2.5-flash-preview',
        instructions: 'Answer in one short sentence.',
        inputTranscription: {},
      },
      ev.push,
      new AbortController().signal,
    );
    t.teardown(() => up.close());
    up.createItem('item_live1', { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'Say hello.' }] }, null);
    up.createResponse();
    const done = await ev.wait('response_done');
    t.equal(done.status, 'completed');
    t.ok(done.tokens && done.tokens.inputTextTokens + done.tokens.cachedInputTokens > 0, 'instructions and the text turn are text input');
    t.ok(done.tokens && done.tokens.outputAudioTokens > 0, 'a spoken answer');
    t.ok(
      ev.all.some((e) => e.type === 'audio_transcript_done'),
      'with its transcript',
    );
  },
);
