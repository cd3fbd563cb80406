// What the phone dialects (codecs/twilio, codecs/telnyx) share in the dialect suite: a simulated provider's
// call, the application's control socket for what the provider never hears (errors, responses).
import type { Test } from 'tap';
import { G711_BYTES_PER_MS } from '@s2s/audio';
import type { KeyFixture, RelayEnv } from '../helpers.js';
import { controlOf, type FakeTwilio, mulawOf, phoneSession, phoneUrl } from '../phone/fakes.js';
import { createCodecs } from '../../src/codecs/index.js';
import { DIALECT_MODEL, turnPcm, type DialectHarness, type DialectLine } from './suite.js';

export async function phoneLine(
  t: Test,
  env: RelayEnv,
  key: KeyFixture,
  provider: 'twilio' | 'telnyx',
  make: (url: string) => FakeTwilio,
): Promise<DialectLine> {
  const { session, ek } = await phoneSession(env, key, { model: DIALECT_MODEL });
  const control = await controlOf(t, env, key, session.id);
  const phone = make(phoneUrl(env, provider));
  t.teardown(() => phone.terminate());
  let closeCode: number | null = null;
  void phone.closed.then((code) => (closeCode = code));
  await phone.opened();
  phone.connected();
  phone.start({ client_secret: ek });
  await control.next('session.created');
  return {
    sessionId: session.id,
    async speak(toneMs, silenceMs) {
      await phone.speak(turnPcm(toneMs, silenceMs));
    },
    send: (text) => phone.send(text),
    heardMs: () => phone.of('media').reduce((ms, m) => ms + Buffer.from(String(m.media.payload), 'base64').length / G711_BYTES_PER_MS, 0),
    responsesDone: () => control.events.filter((e) => e.type === 'response.done').length,
    errors: () => control.events.filter((e) => e.type === 'error'),
    closeCode: () => closeCode,
  };
}

/** Milliseconds of μ-law in a phone codec's `media` messages (both providers: `media.payload`). */
export function phoneAudioMs(frames: string[]): number {
  return frames
    .map((f) => JSON.parse(f) as { event: string; media?: { payload: string } })
    .filter((m) => m.event === 'media')
    .reduce((ms, m) => ms + Buffer.from(m.media?.payload ?? '', 'base64').length / G711_BYTES_PER_MS, 0);
}

/** The error a phone call's application sees on its control socket (the provider hears audio only). */
export const phoneErrorShape = (code: string) => ({
  type: 'error',
  event_id: String,
  error: { type: 'invalid_request_error', code, message: String },
});

/**
 * A phone dialect's harness: its provider's simulated stream (`make`), its stream id and how its `media`
 * message wraps a μ-law payload. What the provider hears is μ-law `media`; what the application sees (errors,
 * responses) arrives on its control socket.
 */
export function phoneHarness(
  provider: 'twilio' | 'telnyx',
  streamId: string,
  make: (url: string) => FakeTwilio,
  mediaMessage: (payload: string) => Record<string, unknown>,
  idMember: Record<string, string>,
): DialectHarness {
  return {
    name: provider,
    codec: {
      make: () => createCodecs()(provider, { id: 'vs_dialect', modelId: DIALECT_MODEL, streamId }),
      appendOf: (pcm) => JSON.stringify(mediaMessage(mulawOf(pcm).toString('base64'))),
      audioMsOf: phoneAudioMs,
      unknown: JSON.stringify({ event: 'no_such_event', ...idMember }),
    },
    open: (t, env, key) => phoneLine(t, env, key, provider, make),
    errorShape: phoneErrorShape,
    // docs/telephony.md: a message over REALTIME_MAX_EVENT_BYTES closes the stream with 1009.
    oversize: 'close_1009',
  };
}
