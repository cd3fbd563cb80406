// The contract every wire dialect passes (services/relay/src/README.md, "Adding a wire dialect"), as the
// shared adapter suite is for providers: its frames decode to the same internal events and encode back, a
// refusal carries the dialect's error shape, and against a real relay the same spoken turn yields the same
// answer and the same metered usage, an unknown event and a message that is not JSON are refused without
// ending the call, and a message over REALTIME_MAX_EVENT_BYTES is answered as docs/architecture.md and
// docs/telephony.md say. A dialect joins by one test file that calls dialectSuite with its harness.
import type { Test } from 'tap';
import { Audio, FormatConverter } from '../../src/audio.js';
import type { ClientCodec, ClientFrames, InternalClientEvent } from '../../src/codecs/events.js';
import { BYTES_PER_MS } from '@s2s/core';
import {
  createKey,
  createModel,
  eventually,
  frames,
  setupRelay,
  silence,
  tone,
  type Client,
  type KeyFixture,
  type RelayEnv,
} from '../helpers.js';

export const DIALECT_MODEL = 'test/dialect-1';
/** REALTIME_MAX_EVENT_BYTES in the suite's relay. */
export const MAX_EVENT_BYTES = 8192;

/** One call of a dialect against a relay, as its client (and, for a phone stream, the application) sees it. */
export interface DialectLine {
  sessionId: string;
  /** Sends `toneMs` of a tone then `silenceMs` of silence, in the dialect's audio. */
  speak(toneMs: number, silenceMs: number): Promise<void>;
  /** One raw message on the channel client events travel (the socket, the data channel). */
  send(text: string): void;
  /** Milliseconds of answer audio the client received. */
  heardMs(): number;
  /** `response.done` events the application saw. */
  responsesDone(): number;
  /** Error events the application saw, as sent (the client, or a phone call's control socket). */
  errors(): Record<string, any>[];
  /** The close code of the client's connection, null while open. */
  closeCode(): number | null;
}

export interface DialectHarness {
  /** The codec folder's name. */
  name: string;
  /** The dialect's codec with how its frames look; absent when the dialect's events are another codec's (webrtc). */
  codec?: {
    make(): ClientCodec;
    /** The dialect's message carrying `pcm` (PCM16 24 kHz) from the client. */
    appendOf(pcm: Buffer): string;
    /** Milliseconds of audio in what the codec sent the client. */
    audioMsOf(frames: string[]): number;
    /** A message of the dialect's shape whose event is unknown. */
    unknown: string;
  };
  open(t: Test, env: RelayEnv, key: KeyFixture): Promise<DialectLine>;
  /** The error event the application sees for `code`, in the dialect's shape (a tap match pattern). */
  errorShape(code: string): Record<string, unknown>;
  /** What a message over the limit gets (docs): the connection closed 1009, or an error event and the call goes on. */
  oversize: 'close_1009' | 'error_event';
}

const frameTexts = (f: ClientFrames): string[] =>
  f === null ? [] : (Array.isArray(f) ? f : [f]).map((x) => (typeof x === 'string' ? x : x.toString('utf8')));

export function dialectSuite(t: Test, h: DialectHarness): void {
  const codec = h.codec;
  if (codec) {
    t.test(`${h.name} codec: 20 ms of audio decodes to one append of 20 ms; 100 ms of answer encodes back to 100 ms`, async (t) => {
      const c = codec.make();
      const pcm = tone(20);
      const decoded = c.decode(Buffer.from(codec.appendOf(pcm)), false) as InternalClientEvent;
      t.equal(decoded?.type, 'audio.append');
      // Audio carries its format (a phone stream's μ-law as it came): its duration is what counts.
      t.equal(decoded.type === 'audio.append' && decoded.audio.pcm16Bytes, pcm.length, 'the same milliseconds in every dialect');
      const place = { responseId: 'resp_1', itemId: 'item_1', outputIndex: 0, contentIndex: 0 };
      // The answer reaches the codec in the format its client hears, as the attachment converts it.
      const toClient = new FormatConverter();
      const answer = (ms: number) => toClient.to(Audio.ofPcm(tone(ms)), c.outputFormat?.() ?? 'pcm16');
      const frames = [
        ...frameTexts(c.encode({ type: 'response.audio.delta', place, audio: answer(60) })),
        ...frameTexts(c.encode({ type: 'response.audio.delta', place, audio: answer(40) })),
        ...frameTexts(c.encode({ type: 'response.audio.done', ...place })),
        ...frameTexts(
          c.encode({
            type: 'response.done',
            responseId: 'resp_1',
            status: 'completed',
            usage: {
              audio_in_ms: 20,
              audio_out_ms: 100,
              input_audio_tokens: 1,
              input_text_tokens: 0,
              cached_input_tokens: 0,
              output_audio_tokens: 2,
              output_text_tokens: 0,
              transcribed_ms: 0,
            },
          }),
        ),
      ];
      t.equal(codec.audioMsOf(frames), 100, 'no millisecond gained or lost');
    });

    t.test(`${h.name} codec: an unknown event and a message that is not JSON are refused invalid_event`, async (t) => {
      const c = codec.make();
      for (const text of [codec.unknown, '{"type":', 'not json'])
        t.match(c.decode(Buffer.from(text), false), { type: 'refusal', code: 'invalid_event' }, text);
    });
  }

  t.test(`${h.name}: a spoken turn answered and metered like every dialect's`, async (t) => {
    const { env, key } = await relay(t);
    const line = await h.open(t, env, key);
    await line.speak(600, 900);
    await eventually(
      () => line.responsesDone(),
      (n) => n >= 1,
      15_000,
    );
    const heard = await eventually(
      () => line.heardMs(),
      (ms) => ms >= 560,
      10_000,
    );
    t.ok(heard >= 560 && heard <= 660, `the echo of 600 ms heard (${heard} ms)`);
    const metered = await eventually(
      () => env.checkpoints.filter((c) => c.session_id === line.sessionId).at(-1)?.audio_in_ms,
      (ms) => ms === 1500,
      10_000,
    ).catch(() => env.checkpoints.filter((c) => c.session_id === line.sessionId).at(-1)?.audio_in_ms);
    t.equal(metered, 1500, 'audio_in_ms is the 1500 ms sent, whatever the wire');
    t.same(line.errors(), [], 'no error');
  });

  t.test(`${h.name}: an unknown event and a message that is not JSON get the dialect's error; the call goes on`, async (t) => {
    const { env, key } = await relay(t);
    const line = await h.open(t, env, key);
    line.send(h.codec?.unknown ?? '{"type":"no.such.event"}');
    line.send('not json');
    const errors = await eventually(
      () => line.errors(),
      (e) => e.length >= 2,
      10_000,
    );
    for (const e of errors) t.match(e, h.errorShape('invalid_event'));
    await line.speak(300, 900);
    await eventually(
      () => line.responsesDone(),
      (n) => n >= 1,
      15_000,
    );
    t.equal(line.closeCode(), null, 'still open, and the next turn answered');
  });

  t.test(`${h.name}: a message over REALTIME_MAX_EVENT_BYTES is answered as documented`, async (t) => {
    const { env, key } = await relay(t);
    const line = await h.open(t, env, key);
    line.send(`{"type":"${'x'.repeat(MAX_EVENT_BYTES)}"}`);
    if (h.oversize === 'close_1009') {
      t.equal(
        await eventually(
          () => line.closeCode(),
          (c) => c !== null,
          10_000,
        ),
        1009,
        'closed 1009',
      );
    } else {
      const errors = await eventually(
        () => line.errors(),
        (e) => e.length >= 1,
        10_000,
      );
      t.match(errors[0], h.errorShape('invalid_event'), 'an invalid_event error');
      t.equal(line.closeCode(), null, 'the call goes on');
    }
  });
}

async function relay(t: Test): Promise<{ env: RelayEnv; key: KeyFixture }> {
  const env = await setupRelay(t, { REALTIME_MAX_EVENT_BYTES: String(MAX_EVENT_BYTES) }, {}, { maxMessageBytes: MAX_EVENT_BYTES });
  await createModel(env.db, { id: DIALECT_MODEL });
  return { env, key: await createKey(env.db, 10_000) };
}

/** `toneMs` of tone then `silenceMs` of silence, PCM16 24 kHz. */
export function turnPcm(toneMs: number, silenceMs: number): Buffer {
  return Buffer.concat([tone(toneMs), silence(silenceMs)]);
}

/** A WebSocket client of a JSON dialect (svc-realtime-v1, openai) as a line; `member`: where a delta carries its audio. */
export function socketLine(sessionId: string, client: Client, member: 'audio' | 'delta'): DialectLine {
  const of = (type: string) => client.events.filter((e) => e.type === type);
  return {
    sessionId,
    async speak(toneMs, silenceMs) {
      for (const f of frames(turnPcm(toneMs, silenceMs))) client.append(f);
    },
    send: (text) => client.send(text),
    heardMs: () =>
      of('response.output_audio.delta').reduce((ms, e) => ms + Buffer.from(String(e[member]), 'base64').length / BYTES_PER_MS, 0),
    responsesDone: () => of('response.done').length,
    errors: () => of('error'),
    closeCode: () => client.closeCode,
  };
}
