// WebRTC calls (codecs/webrtc: the OpenAI dialect's events on `oai-events`, audio on the tracks) run the shared
// dialect suite; a werift peer stands in for the browser.
import t from 'tap';
import { mintClientSecret } from '@s2s/sessions';
import { BrowserPeer } from '@s2s/webrtc/testing';
import { browserSession, eventually } from '../helpers.js';
import { DIALECT_MODEL, dialectSuite, MAX_EVENT_BYTES } from './suite.js';

dialectSuite(t, {
  name: 'webrtc',
  async open(t, env, key) {
    const session = await browserSession(env.db, key, DIALECT_MODEL);
    const { value } = await mintClientSecret({ ctx: { db: env.db }, input: { sessionId: session.id, ttlSeconds: 60, now: new Date() } });
    const b = new BrowserPeer();
    t.teardown(() => b.close());
    const res = await fetch(`${env.url.replace(/^ws/, 'http').replace(/\/v1\/realtime$/, '')}/v1/realtime/calls`, {
      method: 'POST',
      body: await b.offer(),
      headers: { 'Content-Type': 'application/sdp', Authorization: `Bearer ${value}` },
    });
    if (res.status !== 201) throw new Error(`call refused: ${res.status}`);
    // A browser never sends over the answer's max-message-size (REALTIME_MAX_EVENT_BYTES); this peer is told a
    // larger one, as a peer that ignores it would behave, so that the relay's own answer to an oversize event shows.
    const answer = await res.text();
    t.match(answer, `a=max-message-size:${MAX_EVENT_BYTES}`, 'the answer advertises the event limit');
    await b.accept(answer.replace(/a=max-message-size:\d+/, `a=max-message-size:${16 * MAX_EVENT_BYTES}`));
    await b.connected();
    const events = () => b.messages.map((m) => JSON.parse(m) as { type: string; [k: string]: unknown });
    await eventually(
      () => events().some((e) => e.type === 'session.created'),
      (ok) => ok,
      5000,
    );
    return {
      sessionId: session.id,
      async speak(toneMs, silenceMs) {
        await b.speak(toneMs);
        await b.speak(silenceMs, 0);
      },
      send: (text) => b.channel.send(text),
      heardMs: () => b.received.length * 20,
      responsesDone: () => events().filter((e) => e.type === 'response.done').length,
      errors: () => events().filter((e) => e.type === 'error'),
      closeCode: () => (b.channel.readyState === 'open' ? null : -1),
    };
  },
  errorShape: (code) => ({ type: 'error', event_id: String, error: { type: 'invalid_request_error', code, message: String } }),
  oversize: 'error_event',
});
