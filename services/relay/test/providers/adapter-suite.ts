import { createServer } from 'node:net';
import { pcmFrames, pcmTone } from '@s2s/local-provider';
import type { Test } from 'tap';
import {
  BYTES_PER_MS,
  audioTokensOf,
  ProviderBase,
  UpstreamError,
  type MeteredUpstream,
  type ProviderAdapter,
  type UpstreamEvent,
  type UpstreamSessionConfig,
  type UpstreamTokenUsage,
} from '../../src/providers/index.js';
import { Audio } from '../../src/audio.js';

/** One fake upstream on port 0, with what it observed. */
export interface UpstreamHarness {
  /** The adapter under test, pointed at this upstream with the right key. */
  adapter: ProviderAdapter;
  /** Host:port of the upstream, which must never show in an event or error. */
  address: string;
  /** Upgrade requests the upstream has seen. */
  handshakes(): number;
  /** Drops every connection abruptly, as a crashed upstream would. */
  drop(): void;
  /** Announces the end of every live connection and ends it in `timeLeftMs` (Gemini's goAway, the simulator's cap). */
  expire?(timeLeftMs: number): void;
  /** Refuses new connections (an outage), or accepts them again. */
  refuse?(refusing: boolean): void;
  close(): Promise<void>;
}

export interface AdapterSuiteSpec<H extends UpstreamHarness> {
  name: string;
  /**
   * `paced`: the first reply stops after its first chunk until the client acts (a window for barge-in).
   * `capMs`: every connection ends this long after it opens, the way the provider ends a session at its cap
   * (OpenAI: `session_expired` then close 1001, unannounced; Gemini: `goAway` ahead, then the close).
   */
  start(opts: { apiKey: string; paced: boolean; resumable?: boolean; capMs?: number }): Promise<H>;
  /** The same adapter pointed at any URL with any key (for a wrong key or a closed port). */
  adapterFor(harness: H | null, url: string | null, apiKey: string): ProviderAdapter;
  /** Asserts what the upstream saw of the handshake and the session configuration. */
  checkSession(t: Test, harness: H, config: UpstreamSessionConfig, apiKey: string): void;
  /** Asserts what reached the upstream for `sent` (24 kHz PCM). */
  checkInputAudio(t: Test, harness: H, sent: Buffer): void;
  /** The upstream's full reply to `sent` and the usage it reports for it. */
  expectedReply(sent: Buffer): { pcm: Buffer; usage: UpstreamTokenUsage };
  /** Asserts what the upstream got on a barge-in with `playedMs`. */
  checkBargeIn(t: Test, harness: H, playedMs: number): void;
  /**
   * Asserts that the second connection resumed the session, after one spoken turn on the first: its
   * conversation so far (`REPLAYED`, the relay's context) replayed, or the provider's resumption handle.
   */
  checkResumed(t: Test, harness: H): void;
  /**
   * The fake follows the local provider's script of decisions.md (transcripts `speech <ms> ms`, a user text
   * `call <tool> <JSON>` answered by a function call, a function output spoken back): the voice-agent part
   * of the suite runs, for what the adapter's `supports` says it can do.
   */
  agentScript?: boolean;
}

const KEY = 'suite-key-4f1b2c7d9e0a5b6c8d3e';

/** The conversation the relay holds when a continuing session moves (what a replaying adapter seeds a new connection with). */
export const REPLAYED = 'remember 42';
const CONTEXT_ITEMS = [
  {
    key: 'item_ctx',
    item: {
      id: 'item_ctx',
      type: 'message' as const,
      role: 'user' as const,
      status: 'completed' as const,
      content: [{ type: 'input_text' as const, text: REPLAYED }],
    },
  },
];
const CONFIG: UpstreamSessionConfig = { providerModel: 'suite-model', voice: 'not-a-known-voice', turnDetection: { type: 'server_vad' } };

/** Collects events and lets a test wait for one that matches. */
export class Events {
  readonly all: UpstreamEvent[] = [];
  private waiters: { match: (e: UpstreamEvent) => boolean; resolve: (e: UpstreamEvent) => void }[] = [];

  readonly push = (e: UpstreamEvent) => {
    this.all.push(e);
    this.waiters = this.waiters.filter((w) => (w.match(e) ? (w.resolve(e), false) : true));
  };

  /** The first event (from `from` on) that matches, now or when it arrives. */
  wait<T extends UpstreamEvent['type']>(
    type: T,
    match: (e: Extract<UpstreamEvent, { type: T }>) => boolean = () => true,
    from = 0,
  ): Promise<Extract<UpstreamEvent, { type: T }>> {
    const m = (e: UpstreamEvent) => e.type === type && match(e as Extract<UpstreamEvent, { type: T }>);
    const found = this.all.slice(from).find(m);
    if (found) return Promise.resolve(found as Extract<UpstreamEvent, { type: T }>);
    return new Promise((resolve) => this.waiters.push({ match: m, resolve: resolve as (e: UpstreamEvent) => void }));
  }

  deltas(responseId: string): Buffer {
    return Buffer.concat(this.all.flatMap((e) => (e.type === 'audio_delta' && e.responseId === responseId ? [e.audio.pcm] : [])));
  }
}

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const srv = createServer();
    srv.listen(0, '127.0.0.1', () => {
      const port = (srv.address() as { port: number }).port;
      srv.close(() => resolve(port));
    });
  });
}

/** Counts connect attempts of an adapter. */
function counting(adapter: ProviderAdapter): { adapter: ProviderAdapter; attempts: () => number } {
  let attempts = 0;
  return {
    adapter: {
      name: adapter.name,
      tokenRatio: adapter.tokenRatio,
      supports: adapter.supports,
      connect: (config, onEvent, signal) => {
        attempts++;
        return adapter.connect(config, onEvent, signal);
      },
    },
    attempts: () => attempts,
  };
}

/**
 * The contract every provider adapter meets, run against a fake upstream on port 0. Everything said
 * here is said through ProviderBase, as the relay uses adapters.
 */
export function adapterSuite<H extends UpstreamHarness>(t: Test, spec: AdapterSuiteSpec<H>): void {
  /** Every event and error message any test saw: checked at the end for the upstream's address and key. */
  const exposed: string[] = [];
  const harnesses: UpstreamHarness[] = [];

  async function session(
    t: Test,
    paced = false,
    config: UpstreamSessionConfig = CONFIG,
    continuing = false,
    capMs?: number,
  ): Promise<{ h: H; up: MeteredUpstream; ev: Events }> {
    const h = await spec.start({ apiKey: KEY, paced, ...(continuing ? { resumable: true } : {}), ...(capMs ? { capMs } : {}) });
    harnesses.push(h);
    t.teardown(() => h.close());
    const ev = new Events();
    const base = new ProviderBase(h.adapter, { retries: 0, connectTimeoutMs: 5000 });
    const up = await base.open(
      config,
      (e) => {
        exposed.push(JSON.stringify(e, (k, v) => (k === 'pcm' ? undefined : v)));
        ev.push(e);
      },
      new AbortController().signal,
      // The relay's settings and conversation: what a replaying adapter seeds a new connection with.
      continuing
        ? { context: () => ({ settings: { voice: 'not-a-known-voice', turnDetection: { type: 'server_vad' } }, items: CONTEXT_ITEMS }) }
        : {},
    );
    t.teardown(() => up.close());
    return { h, up, ev };
  }

  function sendAudio(up: MeteredUpstream, pcm: Buffer): void {
    for (const f of pcmFrames(pcm, 20)) up.appendAudio(Audio.ofPcm(f));
  }

  t.test(`${spec.name}: connects and sends its session configuration, the key where the protocol wants it`, async (t) => {
    const { h } = await session(t);
    t.equal(h.handshakes(), 1);
    spec.checkSession(t, h, CONFIG, KEY);
  });

  t.test(`${spec.name}: appended audio reaches the upstream, a reply comes back as audio_delta with provider usage`, async (t) => {
    const { h, up, ev } = await session(t);
    const sent = pcmTone(1000);
    sendAudio(up, sent);
    up.commit();
    up.createResponse();
    const created = await ev.wait('response_created');
    const done = await ev.wait('response_done', (e) => e.responseId === created.responseId);
    const expected = spec.expectedReply(sent);
    spec.checkInputAudio(t, h, sent);
    t.equal(done.status, 'completed');
    t.ok(ev.deltas(created.responseId).equals(expected.pcm), 'the reply, byte for byte');
    t.ok(
      ev.all.some((e) => e.type === 'audio_done' && e.responseId === created.responseId),
      'audio_done before response_done',
    );
    t.same(audioTokensOf(done.tokens), expected.usage, 'the provider-reported usage');
    t.same(
      done.metered,
      {
        audio_in_ms: 1000,
        audio_out_ms: Math.floor(expected.pcm.length / 48),
        // Every counter of the provider's report is kept (decisions.md "Usage and price by modality").
        input_audio_tokens: expected.usage.input_audio_tokens,
        input_text_tokens: done.tokens?.inputTextTokens ?? 0,
        cached_input_tokens: done.tokens?.cachedInputTokens ?? 0,
        output_audio_tokens: expected.usage.output_audio_tokens,
        output_text_tokens: done.tokens?.outputTextTokens ?? 0,
        transcribed_ms: done.tokens?.transcribedMs ?? 0,
      },
      'metered by the relay: audio measured, every reported counter kept',
    );
    t.same(up.usage(), done.metered, 'cumulative equals the only response');
  });

  if (spec.agentScript) agentTests(t, spec.name, session);

  t.test(`${spec.name}: barge-in stops the reply`, async (t) => {
    const { h, up, ev } = await session(t, true);
    const sent = pcmTone(1000);
    sendAudio(up, sent);
    up.commit();
    up.createResponse();
    const first = await ev.wait('audio_delta');
    up.cancelResponse(first.responseId, 50);
    const done = await ev.wait('response_done', (e) => e.responseId === first.responseId);
    t.equal(done.status, 'cancelled');
    t.not(done.tokens, null, "the provider's own report of the cancelled response is kept");
    t.equal(done.metered?.output_audio_tokens, done.tokens?.outputAudioTokens, 'and billed as reported');
    // A new short turn: once it completes, anything late from the cancelled one has come through too.
    const mark = ev.all.length;
    sendAudio(up, pcmTone(100));
    up.commit();
    up.createResponse();
    await ev.wait('response_done', (e) => e.responseId !== first.responseId && e.status === 'completed', mark);
    const cut = ev.deltas(first.responseId);
    t.ok(cut.length > 0 && cut.length < spec.expectedReply(sent).pcm.length, 'the reply was cut short');
    const doneAt = ev.all.indexOf(done);
    t.notOk(
      ev.all.slice(doneAt + 1).some((e) => 'responseId' in e && e.responseId === first.responseId),
      'nothing of it after its response_done',
    );
    spec.checkBargeIn(t, h, 50);
  });

  t.test(`${spec.name}: an upstream refusing the key fails fast, without retries`, async (t) => {
    const h = await spec.start({ apiKey: KEY, paced: false });
    harnesses.push(h);
    t.teardown(() => h.close());
    const { adapter, attempts } = counting(spec.adapterFor(h, null, 'wrong-key-0000000000000000'));
    const base = new ProviderBase(adapter, { retries: 2, backoffMs: 1, connectTimeoutMs: 5000 });
    const err = await base.open(CONFIG, () => {}, new AbortController().signal).catch((e: unknown) => e);
    t.ok(err instanceof UpstreamError);
    t.equal((err as UpstreamError).kind, 'unauthorized');
    t.equal((err as UpstreamError).permanent, true);
    t.equal(attempts(), 1, 'not retried');
    t.equal(h.handshakes(), 1);
    exposed.push((err as Error).message, String((err as Error).stack));
    t.notMatch((err as Error).message, 'wrong-key');
  });

  t.test(`${spec.name}: an upstream that is down fails after the retries, before the connect timeout`, async (t) => {
    const port = await freePort();
    const { adapter, attempts } = counting(spec.adapterFor(null, `ws://127.0.0.1:${port}/down`, KEY));
    const base = new ProviderBase(adapter, { retries: 2, backoffMs: 5, connectTimeoutMs: 5000 });
    const err = await base.open(CONFIG, () => {}, new AbortController().signal).catch((e: unknown) => e);
    t.ok(err instanceof UpstreamError);
    t.equal((err as UpstreamError).kind, 'unavailable', 'the outage, not the timeout');
    t.equal((err as UpstreamError).networkCode, 'ECONNREFUSED');
    t.equal(attempts(), 3, 'one attempt and two retries');
    exposed.push((err as Error).message, String((err as Error).stack));
    t.notMatch((err as Error).message, String(port));
    t.notMatch((err as Error).message, '127.0.0.1');
  });

  t.test(`${spec.name}: an upstream dropping mid-session yields closed {unexpected: true}`, async (t) => {
    const { h, up, ev } = await session(t);
    sendAudio(up, pcmTone(100));
    h.drop();
    const closed = await ev.wait('closed');
    t.same(closed, { type: 'closed', unexpected: true });
    const usage = up.usage();
    t.equal(usage.audio_in_ms, 100, 'what was sent before the drop is metered');
    up.appendAudio(Audio.ofPcm(pcmTone(100)));
    t.equal(up.usage().audio_in_ms, 100, 'audio after the upstream is gone is not');
    await up.close();
  });

  /** One turn: `sent`, committed and answered; the response_done (from `mark` on). */
  async function turn(up: MeteredUpstream, ev: Events, sent: Buffer): Promise<Extract<UpstreamEvent, { type: 'response_done' }>> {
    const mark = ev.all.length;
    sendAudio(up, sent);
    up.commit();
    up.createResponse();
    return ev.wait('response_done', (e) => e.status === 'completed', mark);
  }

  async function handshakesReach(h: H, n: number): Promise<void> {
    for (let i = 0; i < 500 && h.handshakes() < n; i++) await new Promise((r) => setTimeout(r, 10));
  }

  t.test(`${spec.name}: continuity: an announced end moves the session, the next turn is answered, usage counted once`, async (t) => {
    const { h, up, ev } = await session(t, false, CONFIG, true);
    if (!h.expire) return t.fail('the harness has no expire(): every fake must announce ends');
    const first = pcmTone(1000);
    const d1 = await turn(up, ev, first);
    h.expire(400);
    await handshakesReach(h, 2);
    t.equal(h.handshakes(), 2, 'a second connection');
    const second = pcmTone(500);
    const d2 = await turn(up, ev, second);
    t.ok(ev.deltas(d2.responseId).equals(spec.expectedReply(second).pcm), 'the turn after the move answered whole');
    t.notOk(
      ev.all.some((e) => e.type === 'closed' || e.type === 'error'),
      'the relay sees neither an error nor a close',
    );
    const out = ev.deltas(d1.responseId).length + ev.deltas(d2.responseId).length;
    t.equal(up.usage().audio_in_ms, 1500, 'input metered once');
    t.equal(up.usage().audio_out_ms, out / BYTES_PER_MS, 'output metered once');
  });

  t.test(`${spec.name}: continuity: a lost connection is replaced, the next turn is answered`, async (t) => {
    const { h, up, ev } = await session(t, false, CONFIG, true);
    await turn(up, ev, pcmTone(500));
    h.drop();
    await handshakesReach(h, 2);
    t.equal(h.handshakes(), 2, 'a second connection');
    const second = pcmTone(500);
    const d2 = await turn(up, ev, second);
    t.ok(ev.deltas(d2.responseId).equals(spec.expectedReply(second).pcm));
    t.notOk(ev.all.some((e) => e.type === 'closed'));
    t.equal(up.usage().audio_in_ms, 1000);
  });

  t.test(`${spec.name}: continuity: the next connection resumes the session (its conversation or the provider's handle)`, async (t) => {
    const { h, up, ev } = await session(t, false, CONFIG, true);
    await turn(up, ev, pcmTone(300));
    h.expire!(300);
    await handshakesReach(h, 2);
    // A turn on the new connection: once it is answered, everything the resumption sent has arrived.
    const second = pcmTone(200);
    const d2 = await turn(up, ev, second);
    t.ok(ev.deltas(d2.responseId).equals(spec.expectedReply(second).pcm), 'the turn after the move answered whole');
    spec.checkResumed(t, h);
  });

  t.test(
    `${spec.name}: continuity: the provider's connection cap is crossed twice, each turn answered whole, usage counted once`,
    async (t) => {
      const { h, up, ev } = await session(t, false, CONFIG, true, 1500);
      const sent = [pcmTone(400), pcmTone(300), pcmTone(200)];
      let out = 0;
      for (const [i, pcm] of sent.entries()) {
        // The cap ends connection i; the session goes on on connection i + 1.
        await handshakesReach(h, i + 1);
        t.equal(h.handshakes(), i + 1, `connection ${i + 1}`);
        const done = await turn(up, ev, pcm);
        t.ok(ev.deltas(done.responseId).equals(spec.expectedReply(pcm).pcm), `turn ${i + 1} answered whole`);
        out += ev.deltas(done.responseId).length;
      }
      t.notOk(
        ev.all.some((e) => e.type === 'closed' || e.type === 'error'),
        'the relay sees neither an error nor a close',
      );
      t.equal(up.usage().audio_in_ms, 900, 'input metered once');
      t.equal(up.usage().audio_out_ms, out / BYTES_PER_MS, 'output metered once');
    },
  );

  t.test(`${spec.name}: continuity: an upstream that cannot be reached again ends the session (fatal error, then closed)`, async (t) => {
    const { h, up, ev } = await session(t, false, CONFIG, true);
    if (!h.refuse) return t.fail('the harness has no refuse(): every fake must play an outage');
    await turn(up, ev, pcmTone(300));
    h.refuse(true);
    h.drop();
    const closed = await ev.wait('closed');
    t.same(closed, { type: 'closed', unexpected: true });
    const error = ev.all.find((e) => e.type === 'error');
    t.match(error, { type: 'error', fatal: true }, 'a fatal error first');
    t.ok(h.handshakes() > 1, 'it tried again');
    t.equal(up.usage().audio_in_ms, 300);
  });

  t.test(`${spec.name}: no event or error carries the upstream's address or key`, async (t) => {
    t.ok(exposed.length > 10, 'events were collected');
    const text = exposed.join('\n');
    t.notMatch(text, KEY);
    t.notMatch(text, 'wrong-key');
    t.notMatch(text, '127.0.0.1');
    t.notMatch(text, 'ws://');
    for (const h of harnesses) t.notMatch(text, h.address.split(':')[1]!);
  });
}

const WEATHER = {
  name: 'get_weather',
  description: 'The weather in a city.',
  parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
};

/** The voice-agent model through the adapter: opening configuration, items, calls, transcripts, tokens by modality. */
function agentTests(
  t: Test,
  name: string,
  session: (t: Test, paced: boolean, config: UpstreamSessionConfig) => Promise<{ up: MeteredUpstream; ev: Events; h: UpstreamHarness }>,
): void {
  const config: UpstreamSessionConfig = {
    providerModel: 'suite-model',
    voice: 'marin',
    instructions: 'You answer questions about the weather.',
    tools: [WEATHER],
    inputTranscription: {},
    turnDetection: null,
  };

  t.test(`${name}: the opening configuration holds; committed audio is transcribed; instructions bill as text`, async (t) => {
    const { up, ev } = await session(t, false, config);
    for (const f of pcmFrames(pcmTone(700), 20)) up.appendAudio(Audio.ofPcm(f));
    up.commit();
    const committed = await ev.wait('input_committed');
    const transcript = await ev.wait('input_transcript_completed', (e) => e.itemKey === committed.itemKey);
    t.equal(transcript.transcript, 'speech 700 ms');
    up.createResponse();
    const done = await ev.wait('response_done');
    t.ok(done.tokens && done.tokens.inputTextTokens > 0, 'the instructions and tools are text input');
    t.ok(done.tokens && done.tokens.inputAudioTokens > 0, 'the audio is audio input');
  });

  t.test(`${name}: a text item asking for a tool gets a function call; its output is spoken back`, async (t) => {
    const { up, ev, h } = await session(t, false, config);
    up.createItem(
      'item_suite_1',
      { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'call get_weather {"city":"Paris"}' }] },
      null,
    );
    const added = await ev.wait('item_added', (e) => e.itemKey === 'item_suite_1');
    t.match(added.item, { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'call get_weather {"city":"Paris"}' }] });
    up.createResponse();
    const call = await ev.wait('function_call_arguments_done');
    t.equal(call.name, 'get_weather');
    t.same(JSON.parse(call.arguments), { city: 'Paris' });
    t.ok(call.callId, 'a call id');
    const first = await ev.wait('response_done');
    t.equal(first.status, 'completed');
    const from = ev.all.length;
    up.createItem('item_suite_2', { type: 'function_call_output', callId: call.callId, output: 'sunny' }, null);
    await ev.wait('item_added', (e) => e.itemKey === 'item_suite_2');
    up.createResponse();
    const spoken = await ev.wait('audio_transcript_done', () => true, from);
    t.equal(spoken.transcript, 'sunny');
    const done = await ev.wait('response_done', (e) => e.responseId !== first.responseId, from);
    t.ok(ev.deltas(done.responseId).length > 0, 'the answer is audio');
    t.ok(done.tokens && done.tokens.cachedInputTokens > 0, 'the context already sent counts as cached');
    if (h.adapter.supports.itemDelete) {
      up.deleteItem('item_suite_1');
      await ev.wait('item_deleted', (e) => e.itemKey === 'item_suite_1');
    }
    up.updateSession({ instructions: 'Be brief.' });
    await ev.wait('session_updated');
  });
}
