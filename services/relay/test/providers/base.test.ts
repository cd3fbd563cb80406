import fc from 'fast-check';
import t from 'tap';
import { usageOf, ZERO_USAGE } from '@s2s/core';
import { ZERO_TOKENS, type VoiceSettings } from '../../src/agent/types.js';
import {
  GEMINI_CAPABILITIES,
  ProviderBase,
  UpstreamError,
  UsageMeter,
  type ProviderAdapter,
  type UpstreamConnection,
  type UpstreamEvent,
  type UpstreamSessionConfig,
} from '../../src/providers/index.js';
import { Audio } from '../../src/audio.js';

const CONFIG: UpstreamSessionConfig = { providerModel: 'm' };
const RATIO = { inputMsPerToken: 100, outputMsPerToken: 50 };
const ROUTE = { provider: 'fake', provider_model: 'fake-1' };

/** An in-memory adapter: each connect runs the next scripted outcome; the test drives events by hand. */
class ScriptedAdapter implements ProviderAdapter {
  readonly name = 'scripted';
  readonly tokenRatio = RATIO;
  readonly supports = GEMINI_CAPABILITIES;
  attempts = 0;
  signals: AbortSignal[] = [];
  emitters: ((e: UpstreamEvent) => void)[] = [];
  appended: number[] = [];
  calls: string[] = [];

  constructor(private readonly script: ('ok' | 'hang' | UpstreamError | Error)[]) {}

  connect(_config: UpstreamSessionConfig, onEvent: (e: UpstreamEvent) => void, signal: AbortSignal): Promise<UpstreamConnection> {
    const step = this.script[this.attempts++] ?? 'ok';
    this.signals.push(signal);
    this.emitters.push(onEvent);
    if (step === 'hang') return new Promise(() => {});
    if (step !== 'ok') return Promise.reject(step);
    const calls = this.calls;
    const appended = this.appended;
    return Promise.resolve({
      appendAudio: (audio: Audio) => void appended.push(audio.bytes),
      commit: () => void calls.push('commit'),
      clear: () => void calls.push('clear'),
      createResponse: () => void calls.push('createResponse'),
      cancelResponse: (id: string | null, ms: number) => void calls.push(`cancel:${id}:${ms}`),
      updateSession: (c: VoiceSettings) => void calls.push(`update:${c.voice}`),
      createItem: (key: string) => void calls.push(`createItem:${key}`),
      deleteItem: (key: string) => void calls.push(`deleteItem:${key}`),
      truncateItem: (key: string, index: number, ms: number) => void calls.push(`truncateItem:${key}:${index}:${ms}`),
      clearOutputAudio: () => void calls.push('clearOutputAudio'),
      close: async () => {
        calls.push('close');
        onEvent({ type: 'closed', unexpected: false });
      },
    });
  }

  /** Emits through the most recent attempt's handler. */
  emit(e: UpstreamEvent): void {
    this.emitters[this.emitters.length - 1]!(e);
  }
}

const signal = () => new AbortController().signal;
const pcm = (bytes: number) => Buffer.alloc(bytes);

t.test('UsageMeter: 48 bytes = 1 ms, remainders kept exact across calls', async (t) => {
  const m = new UsageMeter(RATIO, ROUTE);
  m.addInput(4801);
  t.equal(m.usage().audio_in_ms, 100);
  m.addInput(47);
  t.equal(m.usage().audio_in_ms, 101, '4848 bytes');
  m.addOutput(47);
  t.equal(m.usage().audio_out_ms, 0);
  m.addOutput(1);
  t.equal(m.usage().audio_out_ms, 1);
});

t.test('UsageMeter: usageNow() is usage() at every step, and usage() a copy (property)', async () => {
  const op = fc.oneof(
    fc.record({ k: fc.constant('in' as const), n: fc.nat(5000) }),
    fc.record({ k: fc.constant('out' as const), n: fc.nat(5000) }),
    fc.record({ k: fc.constant('created' as const) }),
    fc.record({ k: fc.constant('done' as const), tokens: fc.option(fc.array(fc.nat(1000), { minLength: 6, maxLength: 6 })) }),
    fc.record({ k: fc.constant('settle' as const) }),
    fc.record({ k: fc.constant('route' as const) }),
  );
  fc.assert(
    fc.property(fc.array(op, { maxLength: 40 }), (ops) => {
      const m = new UsageMeter(RATIO, ROUTE);
      const view = m.usageNow();
      for (const o of ops) {
        if (o.k === 'in') m.addInput(o.n);
        else if (o.k === 'out') m.addOutput(o.n);
        else if (o.k === 'created') m.responseCreated();
        else if (o.k === 'settle') m.settleUnreported();
        else if (o.k === 'route') m.useRoute({ provider: 'other', provider_model: 'o-1' });
        else {
          const [a, b, c, d, e, f] = o.tokens ?? [];
          m.responseDone(
            o.tokens === null
              ? null
              : {
                  inputAudioTokens: a!,
                  inputTextTokens: b!,
                  cachedInputTokens: c!,
                  outputAudioTokens: d!,
                  outputTextTokens: e!,
                  transcribedMs: f!,
                },
          );
        }
        const copy = m.usage();
        if (JSON.stringify(copy) !== JSON.stringify(m.usageNow()) || m.usageNow() !== view || copy === view) return false;
      }
      return true;
    }),
    { numRuns: 500 },
  );
});

t.test('UsageMeter: per-response figures are differences of cumulative ones, so they add up', async (t) => {
  const m = new UsageMeter(RATIO, ROUTE);
  m.addInput(4824); // 100.5 ms
  m.responseCreated();
  m.addOutput(2424); // 50.5 ms
  const r1 = m.responseDone({ ...ZERO_TOKENS, inputAudioTokens: 3, outputAudioTokens: 7 });
  t.same(r1, usageOf({ audio_in_ms: 100, audio_out_ms: 50, input_audio_tokens: 3, output_audio_tokens: 7 }));
  m.addInput(24);
  m.responseCreated();
  m.addOutput(24);
  const r2 = m.responseDone(null);
  t.same(
    r2,
    usageOf({ audio_in_ms: 1, audio_out_ms: 1, input_audio_tokens: 1, output_audio_tokens: 1 }),
    'the halves make whole ms; ratio tokens',
  );
  t.same(m.usage(), usageOf({ audio_in_ms: 101, audio_out_ms: 51, input_audio_tokens: 4, output_audio_tokens: 8 }));
});

t.test('UsageMeter: every counter of a token report is kept, per response and cumulatively', async (t) => {
  const m = new UsageMeter(RATIO, ROUTE);
  m.addInput(48 * 2000);
  m.responseCreated();
  const report = {
    inputAudioTokens: 20,
    inputTextTokens: 300,
    cachedInputTokens: 64,
    outputAudioTokens: 0,
    outputTextTokens: 12,
    transcribedMs: 2000,
  };
  t.same(m.responseDone(report), {
    audio_in_ms: 2000,
    audio_out_ms: 0,
    input_audio_tokens: 20,
    input_text_tokens: 300,
    cached_input_tokens: 64,
    output_audio_tokens: 0,
    output_text_tokens: 12,
    transcribed_ms: 2000,
  });
  m.responseCreated();
  m.addOutput(48 * 500);
  t.same(m.responseDone({ ...report, inputAudioTokens: 0, transcribedMs: 0 }), {
    audio_in_ms: 0,
    audio_out_ms: 500,
    input_audio_tokens: 0,
    input_text_tokens: 300,
    cached_input_tokens: 64,
    output_audio_tokens: 0,
    output_text_tokens: 12,
    transcribed_ms: 0,
  });
  t.same(m.usage(), {
    audio_in_ms: 2000,
    audio_out_ms: 500,
    input_audio_tokens: 20,
    input_text_tokens: 600,
    cached_input_tokens: 128,
    output_audio_tokens: 0,
    output_text_tokens: 24,
    transcribed_ms: 2000,
  });
});

t.test('UsageMeter: ratio fallback rounds each response up', async (t) => {
  const m = new UsageMeter(RATIO, ROUTE);
  m.addInput(48 * 1001);
  m.addOutput(48 * 1001);
  t.same(m.responseDone(null), usageOf({ audio_in_ms: 1001, audio_out_ms: 1001, input_audio_tokens: 11, output_audio_tokens: 21 }));
  t.same(m.responseDone(null), ZERO_USAGE, 'nothing new, nothing billed');
});

t.test('open: meters accepted input and provider output; fills metered on response_done', async (t) => {
  const adapter = new ScriptedAdapter(['ok']);
  const events: UpstreamEvent[] = [];
  const up = await new ProviderBase(adapter).open(CONFIG, (e) => events.push(e), signal());
  up.appendAudio(Audio.ofPcm(pcm(960)));
  up.appendAudio(Audio.ofPcm(pcm(0)));
  up.appendAudio(Audio.ofPcm(pcm(970)));
  t.same(adapter.appended, [960, 970], 'empty frames are not forwarded');
  adapter.emit({ type: 'response_created', responseId: 'r1' });
  adapter.emit({ type: 'audio_delta', responseId: 'r1', audio: Audio.ofPcm(pcm(4800)) });
  adapter.emit({ type: 'audio_delta', responseId: 'r1', audio: Audio.ofPcm(pcm(100)) });
  adapter.emit({ type: 'audio_done', responseId: 'r1' });
  adapter.emit({
    type: 'response_done',
    responseId: 'r1',
    status: 'completed',
    tokens: { ...ZERO_TOKENS, inputAudioTokens: 5, outputAudioTokens: 9 },
  });
  const done = events.find((e) => e.type === 'response_done');
  t.same(done, {
    type: 'response_done',
    responseId: 'r1',
    status: 'completed',
    tokens: { ...ZERO_TOKENS, inputAudioTokens: 5, outputAudioTokens: 9 },
    metered: usageOf({ audio_in_ms: 40, audio_out_ms: 102, input_audio_tokens: 5, output_audio_tokens: 9 }),
  });
  adapter.emit({ type: 'response_created', responseId: 'r2' });
  adapter.emit({ type: 'audio_delta', responseId: 'r2', audio: Audio.ofPcm(pcm(44)) });
  adapter.emit({ type: 'response_done', responseId: 'r2', status: 'cancelled', tokens: null });
  const done2 = events.filter((e) => e.type === 'response_done')[1];
  t.same(
    done2 && done2.type === 'response_done' && done2.metered,
    usageOf({ audio_in_ms: 0, audio_out_ms: 1, input_audio_tokens: 0, output_audio_tokens: 1 }),
    '4 + 44 leftover bytes make 1 ms; tokens by ratio',
  );
  t.same(up.usage(), usageOf({ audio_in_ms: 40, audio_out_ms: 103, input_audio_tokens: 5, output_audio_tokens: 10 }));
  up.commit();
  up.clear();
  up.createResponse();
  up.cancelResponse('r2', 30);
  up.updateSession({ voice: 'x' });
  t.same(adapter.calls, ['commit', 'clear', 'createResponse', 'cancel:r2:30', 'update:x']);
  await up.close();
  t.same(adapter.calls.at(-1), 'close');
});

t.test('a response cut off by the upstream dropping is reported failed and still accounted', async (t) => {
  const adapter = new ScriptedAdapter(['ok']);
  const events: UpstreamEvent[] = [];
  const up = await new ProviderBase(adapter).open(CONFIG, (e) => events.push(e), signal());
  up.appendAudio(Audio.ofPcm(pcm(48 * 300)));
  adapter.emit({ type: 'response_created', responseId: 'r1' });
  adapter.emit({ type: 'audio_delta', responseId: 'r1', audio: Audio.ofPcm(pcm(48 * 120)) });
  adapter.emit({ type: 'closed', unexpected: true });
  t.same(events.slice(-2), [
    {
      type: 'response_done',
      responseId: 'r1',
      status: 'failed',
      tokens: null,
      metered: usageOf({ audio_in_ms: 300, audio_out_ms: 120, input_audio_tokens: 3, output_audio_tokens: 3 }),
    },
    { type: 'closed', unexpected: true },
  ]);
  adapter.emit({ type: 'audio_delta', responseId: 'r1', audio: Audio.ofPcm(pcm(480)) });
  t.equal(up.usage().audio_out_ms, 120, 'nothing counted after closed');
  up.appendAudio(Audio.ofPcm(pcm(480)));
  t.equal(up.usage().audio_in_ms, 300);
  t.equal(events.length, 4, 'nothing delivered after closed');
});

t.test('close() mid-answer settles the answer at the ratio (a client leaving is billed what was produced)', async (t) => {
  const adapter = new ScriptedAdapter(['ok']);
  const events: UpstreamEvent[] = [];
  const up = await new ProviderBase(adapter).open(CONFIG, (e) => events.push(e), signal());
  up.appendAudio(Audio.ofPcm(pcm(48 * 1000)));
  adapter.emit({ type: 'response_created', responseId: 'r1' });
  adapter.emit({ type: 'audio_delta', responseId: 'r1', audio: Audio.ofPcm(pcm(48 * 250)) });
  await up.close();
  t.same(up.usage(), usageOf({ audio_in_ms: 1000, audio_out_ms: 250, input_audio_tokens: 10, output_audio_tokens: 5 }));
  t.notOk(
    events.some((e) => e.type === 'closed'),
    'the closed event of our own close is not relayed',
  );
  await up.close();
  t.same(up.usage().output_audio_tokens, 5, 'closing twice settles once');
});

t.test('close() between responses adds no tokens', async (t) => {
  const adapter = new ScriptedAdapter(['ok']);
  const up = await new ProviderBase(adapter).open(CONFIG, () => {}, signal());
  up.appendAudio(Audio.ofPcm(pcm(48 * 500)));
  await up.close();
  t.same(up.usage(), usageOf({ audio_in_ms: 500, audio_out_ms: 0, input_audio_tokens: 0, output_audio_tokens: 0 }));
});

t.test('retries: transient failures are retried, then it connects', async (t) => {
  const adapter = new ScriptedAdapter([new UpstreamError('scripted', 'unavailable'), new Error('boom'), 'ok']);
  const up = await new ProviderBase(adapter, { retries: 2, backoffMs: 1 }).open(CONFIG, () => {}, signal());
  t.equal(adapter.attempts, 3);
  await up.close();
});

t.test('retries: exhausted → the last failure', async (t) => {
  const adapter = new ScriptedAdapter([
    new UpstreamError('scripted', 'unavailable'),
    new UpstreamError('scripted', 'unavailable', { status: 502 }),
    'ok',
  ]);
  const err = await new ProviderBase(adapter, { retries: 1, backoffMs: 1 }).open(CONFIG, () => {}, signal()).catch((e: unknown) => e);
  t.equal(adapter.attempts, 2);
  t.equal((err as UpstreamError).kind, 'unavailable');
  t.equal((err as UpstreamError).status, 502);
  t.equal((err as Error).message, 'provider scripted is unavailable (status 502)');
});

t.test('permanent failures are not retried', async (t) => {
  for (const kind of ['unauthorized', 'rejected'] as const) {
    const adapter = new ScriptedAdapter([new UpstreamError('scripted', kind, { status: 401 }), 'ok']);
    const err = await new ProviderBase(adapter, { retries: 2, backoffMs: 1 }).open(CONFIG, () => {}, signal()).catch((e: unknown) => e);
    t.equal(adapter.attempts, 1, kind);
    t.equal((err as UpstreamError).kind, kind);
  }
});

t.test('a hanging upstream times out at the connect timeout, and its attempt is aborted', async (t) => {
  const adapter = new ScriptedAdapter(['hang', 'ok']);
  const err = await new ProviderBase(adapter, { connectTimeoutMs: 50, retries: 2 })
    .open(CONFIG, () => {}, signal())
    .catch((e: unknown) => e);
  t.equal((err as UpstreamError).kind, 'timeout');
  t.equal((err as Error).message, 'provider scripted did not answer within the connect timeout');
  t.equal(adapter.attempts, 1, 'the deadline covers the whole open');
  t.equal(adapter.signals[0]!.aborted, true);
});

t.test("the caller's signal aborts the open", async (t) => {
  const adapter = new ScriptedAdapter(['hang']);
  const ctl = new AbortController();
  const pending = new ProviderBase(adapter).open(CONFIG, () => {}, ctl.signal).catch((e: unknown) => e);
  ctl.abort();
  const err = await pending;
  t.equal((err as UpstreamError).kind, 'aborted');
  t.equal(adapter.signals[0]!.aborted, true);
  const already = await new ProviderBase(new ScriptedAdapter(['ok'])).open(CONFIG, () => {}, ctl.signal).catch((e: unknown) => e);
  t.equal((already as UpstreamError).kind, 'aborted');
});

t.test('events of an abandoned attempt are ignored', async (t) => {
  const adapter = new ScriptedAdapter([new UpstreamError('scripted', 'unavailable'), 'ok']);
  const events: UpstreamEvent[] = [];
  const up = await new ProviderBase(adapter, { backoffMs: 1 }).open(CONFIG, (e) => events.push(e), signal());
  adapter.emitters[0]!({ type: 'audio_delta', responseId: 'old', audio: Audio.ofPcm(pcm(4800)) });
  adapter.emitters[1]!({ type: 'audio_delta', responseId: 'new', audio: Audio.ofPcm(pcm(48)) });
  t.same(
    events.map((e) => e.type === 'audio_delta' && e.responseId),
    ['new'],
  );
  t.equal(up.usage().audio_out_ms, 1);
  await up.close();
});

t.test('per-call options override the defaults', async (t) => {
  const adapter = new ScriptedAdapter([new UpstreamError('scripted', 'unavailable'), new UpstreamError('scripted', 'unavailable'), 'ok']);
  const err = await new ProviderBase(adapter, { retries: 5, backoffMs: 1 })
    .open(CONFIG, () => {}, signal(), { retries: 0 })
    .catch((e: unknown) => e);
  t.equal(adapter.attempts, 1);
  t.equal((err as UpstreamError).kind, 'unavailable');
});
