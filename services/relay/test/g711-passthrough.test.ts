// G.711 pass-through (issue 26): a client speaking μ-law or A-law to a provider that takes it has its audio
// carried as is, base64 untouched, both ways; where the provider does not take it, the relay converts in one
// place. The bill is the same either way, to the millisecond, and a move mid-call to a route of the other
// kind hears the turn under way again in its own format, no millisecond gained or lost.
import t, { type Test } from 'tap';
import { G711Encoder } from '@s2s/audio';
import { startLocalProvider, pcmSilence, pcmTone, type ReceivedClientEvent } from '@s2s/local-provider';
import { Audio, FormatConverter, type AudioFormat } from '../src/audio.js';
import type { AudioFormats } from '../src/agent/types.js';
import { LOCAL_CAPABILITIES, LocalAdapter } from '../src/providers/local/adapter.js';
import { ProviderBase } from '../src/providers/shared/base.js';
import { DEFAULT_CONTINUITY } from '../src/providers/shared/continuity.js';
import { UpstreamError } from '../src/providers/shared/errors.js';
import type { UpstreamConnection, UpstreamEvent } from '../src/providers/shared/types.js';
import { UpstreamSession } from '../src/providers/shared/upstream-session.js';
import { UsageMeter } from '../src/metering/usage-meter.js';
import { createSession, mintClientSecret } from '@s2s/sessions';
import WebSocket from 'ws';
import { Client, TEST_POLICY, createKey, createModel, eventually, setupRelay, silence, tone } from './helpers.js';
import { FakeTwilio, MODEL, mulawOf, phoneSession, phoneUrl } from './phone/fakes.js';

/** The simulator behind a provider that takes PCM16 24 kHz only, as Gemini does: the relay must convert. */
class Pcm16OnlyAdapter extends LocalAdapter {
  override readonly supports = Object.freeze({ ...LOCAL_CAPABILITIES, audioFormats: ['pcm16'] as const });
}

/** 20 ms frames of a caller's μ-law: speech then silence, as a phone sends it. */
function callerFrames(): Buffer[] {
  const ulaw = new G711Encoder('pcmu').push(Buffer.concat([pcmSilence(100), pcmTone(500), pcmSilence(700)]));
  const frames: Buffer[] = [];
  for (let i = 0; i < ulaw.length; i += 160) frames.push(ulaw.subarray(i, i + 160));
  return frames;
}

/**
 * One call, the caller's μ-law in 20 ms frames through ProviderBase to the simulator's echo-stream model,
 * the answer converted to μ-law for the caller as the attachment does: what was billed, what the caller got,
 * what the simulator received.
 */
async function call(t: Test, Adapter: typeof LocalAdapter, frames: Buffer[]) {
  const received: ReceivedClientEvent[] = [];
  const sim = await startLocalProvider({ port: 0, onClientEvent: (e) => received.push(e) });
  t.teardown(() => sim.close());
  const base = new ProviderBase(new Adapter({ url: sim.url }), { continuity: false });
  const toCaller = new FormatConverter();
  const heard: Buffer[] = [];
  let done = false;
  const up = await base.open(
    { providerModel: 'echo-stream', formats: { input: 'pcmu', output: 'pcmu' } },
    (e: UpstreamEvent) => {
      if (e.type === 'audio_delta') heard.push(toCaller.to(e.audio, 'pcmu').pcm);
      if (e.type === 'response_done') done = true;
    },
    new AbortController().signal,
  );
  t.teardown(() => up.close());
  for (const f of frames) up.appendAudio(Audio.ofCheckedBase64(f.toString('base64'), f.length, 'pcmu'));
  const sent = frames.reduce((n, f) => n + f.length, 0);
  await eventually(
    () => heard.reduce((n, b) => n + b.length, 0),
    (n) => n >= sent - 1,
  );
  up.commit();
  await eventually(
    () => done,
    (d) => d,
  );
  return { usage: up.usage(), heard: Buffer.concat(heard), received: received.filter((r) => r.connection === 1).map((r) => r.event) };
}

t.test('the same μ-law call through a pass-through route and a converting one bills the same milliseconds', async (t) => {
  const frames = callerFrames();
  const bytes = frames.reduce((n, f) => n + f.length, 0);
  t.equal(bytes, 1300 * 8, '1.3 s of μ-law');

  const through = await call(t, LocalAdapter, frames);
  const converted = await call(t, Pcm16OnlyAdapter, frames);

  t.equal(through.usage.audio_in_ms, 1300, 'pass-through: the μ-law bytes ÷ 8');
  t.equal(converted.usage.audio_in_ms, 1300, 'converting: the same');
  t.equal(through.usage.audio_out_ms, 1300, 'the echo, 1300 ms');
  t.equal(converted.usage.audio_out_ms, through.usage.audio_out_ms, 'the same output milliseconds');
  t.same(converted.usage, through.usage, 'every counter the same');
  t.equal(through.heard.length, bytes, 'the caller got back the very length it sent');
  t.ok(Math.abs(converted.heard.length - bytes) <= 1, `and on the converting route too (${converted.heard.length})`);

  // Pass-through really passes through: μ-law configured upstream, the caller's bytes byte for byte, both ways.
  const update = through.received.find((e) => e.type === 'session.update') as { session: { audio: Record<string, any> } };
  t.same(update.session.audio.input.format, { type: 'audio/pcmu' });
  t.same(update.session.audio.output.format, { type: 'audio/pcmu' });
  const appended = through.received.flatMap((e) => (e.type === 'input_audio_buffer.append' ? [e.audio] : []));
  t.same(
    appended,
    frames.map((f) => f.toString('base64')),
    "the upstream received the caller's frames as they came",
  );
  t.ok(through.heard.equals(Buffer.concat(frames)), 'and the echo came back to the caller untouched');

  // The converting route got PCM16 24 kHz: six bytes for each byte of μ-law, the same milliseconds.
  const pcmUpdate = converted.received.find((e) => e.type === 'session.update') as { session: { audio: Record<string, any> } };
  t.same(pcmUpdate.session.audio.input.format, { type: 'audio/pcm', rate: 24000 });
  const pcm = converted.received.flatMap((e) => (e.type === 'input_audio_buffer.append' ? [Buffer.from(e.audio, 'base64')] : []));
  t.equal(
    pcm.reduce((n, b) => n + b.length, 0),
    bytes * 6,
  );
});

t.test("a Twilio call's media payloads reach the provider byte for byte, and its answer comes back as μ-law", async (t) => {
  const env = await setupRelay(t);
  await createModel(env.db, { id: MODEL });
  const key = await createKey(env.db, 10_000);
  const { ek } = await phoneSession(env, key);
  const phone = new FakeTwilio(phoneUrl(env, 'twilio'));
  t.teardown(() => phone.terminate());
  await phone.opened();
  phone.connected();
  phone.start({ client_secret: ek });
  const speech = Buffer.concat([tone(600), silence(700)]);
  const sent = await phone.speak(speech);
  await eventually(
    () => phone.of('mark').length,
    (n) => n === 1,
  );
  const update = env.simEvents.find((e) => e.event.type === 'session.update')!.event as { session: { audio: Record<string, any> } };
  t.same(update.session.audio.input.format, { type: 'audio/pcmu' }, 'the upstream session is configured in μ-law');
  t.same(update.session.audio.output.format, { type: 'audio/pcmu' });
  const appended = env.simEvents.flatMap((e) => (e.event.type === 'input_audio_buffer.append' ? [e.event.audio] : []));
  const ulaw = mulawOf(speech);
  const payloads: string[] = [];
  for (let i = 0; i < ulaw.length; i += 160) payloads.push(ulaw.subarray(i, i + 160).toString('base64'));
  t.same(appended, payloads, "the upstream's appends are the caller's payloads, byte for byte");
  t.equal(sent, ulaw.length);
  const media = phone.of('media').map((m) => Buffer.from(m.media.payload, 'base64'));
  t.ok(
    media.slice(0, -1).every((m) => m.length === 160),
    'the answer in 20 ms chunks',
  );
  const cp = await eventually(
    () => env.checkpoints.at(-1),
    (c) => c !== undefined && c.audio_in_ms === sent / 8,
  );
  t.equal(cp?.audio_in_ms, sent / 8, 'billed as the μ-law bytes ÷ 8');
});

/** An upstream connection recording the audio it is sent, in its format. */
function recorder(): UpstreamConnection & { heard: Audio[] } {
  const heard: Audio[] = [];
  const noop = () => {};
  return {
    heard,
    appendAudio: (a: Audio) => heard.push(a),
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
  };
}

const ms = (audio: Audio[]) => audio.reduce((n, a) => n + a.pcm16Bytes, 0) / 48;

/**
 * A call in `client` format on a first route taking `first`, lost mid-turn and moved to a second route
 * taking `second`: what each connection heard, in which format, and what was billed.
 */
async function failover(t: Test, client: AudioFormat, first: AudioFormat[], second: AudioFormat[]) {
  const one = recorder();
  const two = recorder();
  const opened: AudioFormats[] = [];
  const meter = new UsageMeter({ inputMsPerToken: 100, outputMsPerToken: 50 }, { provider: 'openai', provider_model: 'gpt-realtime' });
  const conn = new UpstreamSession('openai', meter, () => {}, undefined, {
    policy: { ...DEFAULT_CONTINUITY, maxConnectionMs: 0, backoffMs: 1 },
    context: () => ({ settings: { turnDetection: null, formats: { input: client, output: client } }, items: [] }),
    routes: [
      {
        provider: 'openai',
        providerModel: 'gpt-realtime',
        audioFormats: first,
        reopen: async () => ({ error: new UpstreamError('openai', 'rejected') }),
      },
      {
        provider: 'gemini',
        providerModel: 'flash',
        audioFormats: second,
        reopen: async (config) => {
          opened.push(config.formats as AudioFormats);
          return { connection: two };
        },
      },
    ],
  });
  const generation = conn.nextGeneration();
  const firstFormats = { input: first.includes(client) ? client : 'pcm16', output: first.includes(client) ? client : 'pcm16' } as const;
  conn.attach(one, firstFormats);
  // 100 ms frames in the client's format, told apart by their bytes.
  const frame = (i: number) => {
    const n = client === 'pcm16' ? 4800 : 800;
    const pcm = Buffer.from(pcmTone(100, { frequencyHz: 300 + 50 * i }));
    const bytes = client === 'pcm16' ? pcm : new G711Encoder(client).push(pcm);
    t.equal(bytes.length, n);
    return Audio.ofCheckedBase64(bytes.toString('base64'), bytes.length, client);
  };
  for (let i = 0; i < 5; i++) conn.appendAudio(frame(i));
  conn.handle({ type: 'closed', unexpected: true }, generation);
  await eventually(
    () => opened.length,
    (n) => n === 1,
  );
  await new Promise((resolve) => setTimeout(resolve, 10));
  for (let i = 5; i < 8; i++) conn.appendAudio(frame(i));
  return { one: one.heard, two: two.heard, opened: opened[0]!, usage: meter.usage() };
}

t.test('a failover mid-call from a route taking μ-law to one taking PCM16 only replays the turn as PCM16, no ms lost', async (t) => {
  const r = await failover(t, 'pcmu', ['pcm16', 'pcmu', 'pcma'], ['pcm16']);
  t.same(
    r.one.map((a) => a.format),
    Array(5).fill('pcmu'),
    'the first route heard the μ-law as it came',
  );
  t.same(r.opened, { input: 'pcm16', output: 'pcm16' }, 'the second opened in PCM16');
  t.ok(
    r.two.every((a) => a.format === 'pcm16'),
    'and heard PCM16 only',
  );
  t.equal(ms(r.two), 800, 'the turn under way (500 ms) again, then 300 ms more: no ms gained or lost');
  t.equal(r.usage.audio_in_ms, 800, 'billed once: 800 ms');
});

t.test('a failover the other way (PCM16-only route to one taking μ-law) replays in μ-law, no ms lost', async (t) => {
  const r = await failover(t, 'pcmu', ['pcm16'], ['pcm16', 'pcmu']);
  t.ok(
    r.one.every((a) => a.format === 'pcm16'),
    'the first route heard the μ-law converted',
  );
  t.equal(ms(r.one), 500);
  t.same(r.opened, { input: 'pcmu', output: 'pcmu' }, 'the second takes μ-law: the call passes through from now on');
  t.ok(
    r.two.every((a) => a.format === 'pcmu'),
    'it heard μ-law only',
  );
  t.equal(ms(r.two), 800);
  t.equal(
    r.two.slice(-3).reduce((n, a) => n + a.bytes, 0),
    2400,
    'the new frames as they came',
  );
  t.equal(r.usage.audio_in_ms, 800);
});

t.test('a reconnect to a route taking the same format replays the very μ-law bytes', async (t) => {
  const r = await failover(t, 'pcma', ['pcm16', 'pcma'], ['pcm16', 'pcma']);
  const first = Buffer.concat(r.one.map((a) => a.pcm));
  const replayed = Buffer.concat(r.two.slice(0, -3).map((a) => a.pcm));
  t.ok(replayed.equals(first), 'the retained A-law, byte for byte');
  t.equal(ms(r.two), 800);
  t.equal(r.usage.audio_in_ms, 800);
});

t.test("an OpenAI client's μ-law item audio reaches a μ-law upstream as μ-law of the same length, billed the same", async (t) => {
  const env = await setupRelay(t);
  await createModel(env.db, { id: 'test/g711-items' });
  const key = await createKey(env.db, 1000);
  const { session } = await createSession({
    ctx: { db: env.db },
    input: {
      key: { keyId: key.keyId, walletId: key.walletId },
      request: { model: 'test/g711-items', mode: 'speech_to_speech' },
      clientSecretSettings: { audio: { input: { format: { type: 'audio/pcmu' } }, output: { format: { type: 'audio/pcmu' } } } },
      traceId: 'e'.repeat(32),
      policy: TEST_POLICY,
    },
  });
  const ek = (await mintClientSecret({ ctx: { db: env.db }, input: { sessionId: session.id, ttlSeconds: 60, now: new Date() } })).value;
  const ws = new WebSocket(`${env.url}?model=test/g711-items`, ['realtime', `openai-insecure-api-key.${ek}`], { perMessageDeflate: false });
  t.teardown(() => ws.terminate());
  const client = new Client(ws);
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
  });
  await client.next('session.created');
  const ulaw = mulawOf(Buffer.concat([tone(400), silence(100)]));
  client.send({
    type: 'conversation.item.create',
    item: { type: 'message', role: 'user', content: [{ type: 'input_audio', audio: ulaw.toString('base64') }] },
  });
  await client.next('conversation.item.done');
  const created = env.simEvents.find((e) => e.event.type === 'conversation.item.create')!.event as {
    item: { content: { type: string; audio?: string }[] };
  };
  const upstream = Buffer.from(created.item.content[0]!.audio!, 'base64');
  t.equal(upstream.length, ulaw.length, 'μ-law to the μ-law upstream, the same 500 ms');
  client.send({ type: 'response.create' });
  await client.next('response.done');
  const cp = await eventually(
    () => env.checkpoints.at(-1),
    (c) => c !== undefined && c.audio_in_ms === ulaw.length / 8,
  );
  t.equal(cp?.audio_in_ms, ulaw.length / 8, 'billed as the μ-law bytes ÷ 8');
});
