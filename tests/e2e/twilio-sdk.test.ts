// The Agents SDK's own Twilio bridge, unmodified (`@openai/agents-extensions`, TwilioRealtimeTransportLayer),
// against the real gateway processes: it asks for audio/pcmu both ways (decisions.md, "Phone audio"). A
// simulated Twilio Media Stream, written from Twilio's documented messages, calls the application's server.
import type { AddressInfo } from 'node:net';
import t from 'tap';
import { TwilioRealtimeTransportLayer } from '@openai/agents-extensions';
import { RealtimeAgent, RealtimeSession } from '@openai/agents/realtime';
import { CreateKeyResponse, type VoiceSession } from '@s2s/contract';
import { pcmSilence, pcmTone } from '@s2s/local-provider';
import { eventually, sleep } from '@s2s/testing';
import WebSocket, { WebSocketServer } from 'ws';
import { api, startEdge, startStack } from './stack.js';

const MODEL = 'local/echo-1';
const SID = 'MZ00000000000000000000000000000009';

/** G.711 μ-law of one linear sample (ITU-T G.711), for the simulated caller. */
function mulaw(sample: number): number {
  const BIAS = 0x84;
  let s = Math.max(-32635, Math.min(32635, sample));
  const sign = s < 0 ? 0x80 : 0;
  if (s < 0) s = -s;
  s += BIAS;
  let exponent = 7;
  for (let mask = 0x4000; (s & mask) === 0 && exponent > 0; exponent--, mask >>= 1);
  const mantissa = (s >> (exponent + 3)) & 0x0f;
  return ~(sign | (exponent << 4) | mantissa) & 0xff;
}

/** 24 kHz PCM16 as 8 kHz μ-law (every third sample: the tone is far below 4 kHz). */
function mulawOf(pcm: Buffer): Buffer {
  const out = Buffer.alloc(Math.floor(pcm.length / 6));
  for (let i = 0; i < out.length; i++) out[i] = mulaw(pcm.readInt16LE(6 * i));
  return out;
}

t.test('the unmodified TwilioRealtimeTransportLayer: the caller heard in μ-law, answered in μ-law, metered and billed', async (t) => {
  const stack = await startStack(t);
  const edge = await startEdge(t, stack);
  const key = CreateKeyResponse.parse(
    (await api<CreateKeyResponse>(stack, 'POST', '/admin/v1/keys', { admin: true, body: { balance_cents: 10_000, label: 'twilio' } })).body,
  );

  // The application's server: the SDK's documented pattern, only the URL and the key changed.
  const app = new WebSocketServer({ port: 0, host: '127.0.0.1' });
  await new Promise<void>((resolve) => app.once('listening', () => resolve()));
  t.teardown(() => new Promise<void>((resolve) => app.close(() => resolve())));
  const sessions: RealtimeSession[] = [];
  const errors: unknown[] = [];
  app.on('connection', (twilioWebSocket) => {
    const transport = new TwilioRealtimeTransportLayer({ twilioWebSocket });
    const agent = new RealtimeAgent({ name: 'phone', instructions: 'You answer the phone.' });
    // The SDK's session defaults name PCM16 explicitly, which the transport keeps; the app asks for μ-law as
    // Twilio's own guide does.
    const session = new RealtimeSession(agent, {
      transport,
      model: MODEL,
      config: { audio: { input: { format: 'g711_ulaw' }, output: { format: 'g711_ulaw' } } },
    });
    session.on('error', (e) => errors.push(e));
    sessions.push(session);
    void session.connect({ apiKey: key.key, url: `${edge.origin.replace(/^http/, 'ws')}/v1/realtime?model=${MODEL}` });
  });
  t.teardown(() => sessions.forEach((s) => s.close()));

  // The simulated Twilio.
  const twilio = new WebSocket(`ws://127.0.0.1:${(app.address() as AddressInfo).port}/`);
  const received: Record<string, any>[] = [];
  twilio.on('message', (d) => received.push(JSON.parse(d.toString())));
  await new Promise<void>((resolve) => twilio.once('open', () => resolve()));
  const send = (m: unknown) => twilio.send(JSON.stringify(m));
  send({ event: 'connected', protocol: 'Call', version: '1.0.0' });
  send({
    event: 'start',
    sequenceNumber: '1',
    start: {
      accountSid: 'AC00000000000000000000000000000009',
      streamSid: SID,
      callSid: 'CA00000000000000000000000000000009',
      tracks: ['inbound'],
      mediaFormat: { encoding: 'audio/x-mulaw', sampleRate: 8000, channels: 1 },
      customParameters: {},
    },
    streamSid: SID,
  });
  const raw: Record<string, any>[] = [];
  const session = await eventually(
    () => sessions[0],
    (s) => s !== undefined,
  );
  session!.transport.on('*', (e: Record<string, any>) => raw.push(e));
  const updated = await eventually(
    () => raw.find((e) => e.type === 'session.updated' && e.session?.audio?.input?.format?.type === 'audio/pcmu'),
    (e) => e !== undefined,
    20_000,
  );
  t.match(
    updated?.session.audio,
    { input: { format: { type: 'audio/pcmu' } }, output: { format: { type: 'audio/pcmu' } } },
    'μ-law both ways, as the SDK asked',
  );
  const sessionId = (raw.find((e) => e.type === 'session.created')?.session as { id: string }).id;

  const speech = mulawOf(Buffer.concat([pcmTone(600), pcmSilence(800)]));
  for (let i = 0, chunk = 1; i < speech.length; i += 160, chunk++) {
    send({
      event: 'media',
      sequenceNumber: String(chunk + 1),
      media: {
        track: 'inbound',
        chunk: String(chunk),
        timestamp: String(chunk * 20),
        payload: speech.subarray(i, i + 160).toString('base64'),
      },
      streamSid: SID,
    });
    await sleep(20);
  }
  await eventually(
    () => raw.some((e) => e.type === 'response.done'),
    (x) => x,
    20_000,
  );
  await eventually(
    () => received.filter((m) => m.event === 'media').length,
    (n) => n > 10,
  );
  const media = received.filter((m) => m.event === 'media');
  const out = Buffer.concat(media.map((m) => Buffer.from(m.media.payload, 'base64')));
  t.ok(out.length > 0 && media.every((m) => m.streamSid === SID), 'the answer reached the caller as Twilio media (μ-law from the gateway)');
  t.same(errors, [], 'no SDK errors');

  // The call ends: the SDK closes its socket, the legacy session ends and settles on what was measured.
  twilio.close();
  session!.close();
  const settled = await eventually(
    async () =>
      (
        await api<VoiceSession & { usage: { audio_in_ms: number; billed_cents: number } }>(
          stack,
          'GET',
          `/v1/voice/sessions/${sessionId}`,
          { key: key.key },
        )
      ).body,
    (s) => s.status === 'completed',
    20_000,
  );
  t.equal(settled.status, 'completed');
  t.ok(
    settled.usage.audio_in_ms >= (speech.length / 8) * 0.9,
    `audio_in_ms ${settled.usage.audio_in_ms}: the caller's μ-law in real milliseconds`,
  );
  t.ok(settled.usage.audio_in_ms <= speech.length / 8, 'never more than was sent');
  t.ok(settled.usage.billed_cents > 0, 'billed');
});
