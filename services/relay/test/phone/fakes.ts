// A simulated telephony provider, written from Twilio's and Telnyx's documented media-stream messages, and the
// fixtures of the phone tests.
import type { Test } from 'tap';
import { encodeG711 } from '@s2s/audio';
import { createSession, mintClientSecret } from '@s2s/sessions';
import WebSocket from 'ws';
import { Client, TEST_POLICY, sleep, type KeyFixture, type RelayEnv } from '../helpers.js';

export const MODEL = 'test/phone-1';
export const SID = 'MZ00000000000000000000000000000001';

/** μ-law of 24 kHz PCM16 (every third sample: the tones are far below 4 kHz). */
export function mulawOf(pcm: Buffer): Buffer {
  const n = Math.floor(pcm.length / 6);
  const s = new Int16Array(n);
  for (let i = 0; i < n; i++) s[i] = pcm.readInt16LE(6 * i);
  return Buffer.from(encodeG711('pcmu', s));
}

/** A simulated Twilio: it sends Twilio's messages and records what the gateway sends it. */
export class FakeTwilio {
  readonly received: Record<string, any>[] = [];
  readonly closed: Promise<number>;
  protected seq = 0;
  protected chunk = 0;
  private readonly ws: WebSocket;

  constructor(url: string, headers: Record<string, string> = {}) {
    this.ws = new WebSocket(url, { headers, perMessageDeflate: false });
    this.ws.on('message', (d) => this.received.push(JSON.parse(d.toString())));
    this.ws.on('error', () => {});
    this.closed = new Promise((resolve) => this.ws.on('close', (code) => resolve(code)));
  }

  opened(): Promise<void> {
    return new Promise((resolve, reject) => {
      this.ws.once('open', () => resolve());
      this.ws.once('unexpected-response', (_req, res) => reject(new Error(`refused ${res.statusCode}`)));
    });
  }

  send(m: unknown): void {
    this.ws.send(typeof m === 'string' ? m : JSON.stringify(m));
  }

  connected(): void {
    this.send({ event: 'connected', protocol: 'Call', version: '1.0.0' });
  }

  start(parameters: Record<string, string>): void {
    this.send({
      event: 'start',
      sequenceNumber: String(++this.seq),
      start: {
        accountSid: 'AC00000000000000000000000000000001',
        streamSid: SID,
        callSid: 'CA00000000000000000000000000000001',
        tracks: ['inbound'],
        mediaFormat: { encoding: 'audio/x-mulaw', sampleRate: 8000, channels: 1 },
        customParameters: parameters,
      },
      streamSid: SID,
    });
  }

  media(payload: Buffer): void {
    this.chunk++;
    this.send({
      event: 'media',
      sequenceNumber: String(++this.seq),
      media: { track: 'inbound', chunk: String(this.chunk), timestamp: String(this.chunk * 20), payload: payload.toString('base64') },
      streamSid: SID,
    });
  }

  /** Speech as 20 ms μ-law frames, `gapMs` apart. */
  async speak(pcm: Buffer, gapMs = 2): Promise<number> {
    const mulaw = mulawOf(pcm);
    for (let i = 0; i < mulaw.length; i += 160) {
      this.media(mulaw.subarray(i, i + 160));
      await sleep(gapMs);
    }
    return mulaw.length;
  }

  dtmf(digit: string): void {
    this.send({ event: 'dtmf', streamSid: SID, sequenceNumber: String(++this.seq), dtmf: { track: 'inbound_track', digit } });
  }

  mark(name: string): void {
    this.send({ event: 'mark', sequenceNumber: String(++this.seq), streamSid: SID, mark: { name } });
  }

  stop(): void {
    this.send({
      event: 'stop',
      sequenceNumber: String(++this.seq),
      stop: { accountSid: 'AC00000000000000000000000000000001', callSid: 'CA00000000000000000000000000000001' },
      streamSid: SID,
    });
  }

  of(event: string): Record<string, any>[] {
    return this.received.filter((m) => m.event === event);
  }

  terminate(): void {
    this.ws.terminate();
  }
}

export function phoneUrl(env: RelayEnv, provider: 'twilio' | 'telnyx'): string {
  return env.url.replace(/\/v1\/realtime$/, `/v1/telephony/${provider}`);
}

/** A session as POST /v1/realtime/client_secrets makes it for a phone app, and its secret. */
export async function phoneSession(
  env: RelayEnv,
  key: KeyFixture,
  opts: { ttlSeconds?: number; ageSeconds?: number; model?: string } = {},
) {
  const { session } = await createSession({
    ctx: { db: env.db },
    input: {
      key: { keyId: key.keyId, walletId: key.walletId },
      request: { model: opts.model ?? MODEL, mode: 'speech_to_speech' },
      clientSecretSettings: {
        instructions: 'You answer the phone.',
        tools: [{ type: 'function', name: 'lookup', parameters: { type: 'object', properties: { q: { type: 'string' } } } }],
      },
      traceId: 'd'.repeat(32),
      policy: TEST_POLICY,
    },
  });
  const now = new Date(Date.now() - (opts.ageSeconds ?? 0) * 1000);
  const ek = (await mintClientSecret({ ctx: { db: env.db }, input: { sessionId: session.id, ttlSeconds: opts.ttlSeconds ?? 60, now } }))
    .value;
  return { session, ek };
}

/** A control socket (raw ws with the API key): what the application sees of the call. */
export async function controlOf(t: Test, env: RelayEnv, key: KeyFixture, sessionId: string): Promise<Client> {
  const ws = new WebSocket(`${env.url}?call_id=${sessionId}`, { headers: { Authorization: `Bearer ${key.secret}` } });
  const c = new Client(ws);
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('unexpected-response', (_req, res) => reject(new Error(`control refused ${res.statusCode}`)));
  });
  t.teardown(() => ws.terminate());
  return c;
}

/** A simulated Telnyx (bidirectional RTP mode, PCMU): the same calls as FakeTwilio, Telnyx's messages. */
export class FakeTelnyx extends FakeTwilio {
  override connected(): void {
    this.send({ event: 'connected', version: '1.0.0' });
  }

  override start(parameters: Record<string, string>): void {
    this.send({
      event: 'start',
      sequence_number: String(++this.seq),
      stream_id: TELNYX_STREAM,
      start: {
        user_id: '3E6F995F-85F7-4705-9741-53B116D28237',
        call_control_id: 'v3:call-control-id',
        call_session_id: 'ff55a038-6f5d-11ef-9692-02420aeffb1f',
        from: '+13122010094',
        to: '+13122123456',
        custom_parameters: parameters,
        media_format: { encoding: 'PCMU', sample_rate: 8000, channels: 1 },
      },
    });
  }

  override media(payload: Buffer): void {
    this.chunk++;
    this.send({
      event: 'media',
      sequence_number: String(++this.seq),
      media: { track: 'inbound', chunk: String(this.chunk), timestamp: String(this.chunk * 20), payload: payload.toString('base64') },
      stream_id: TELNYX_STREAM,
    });
  }

  override dtmf(digit: string): void {
    this.send({
      event: 'dtmf',
      stream_id: TELNYX_STREAM,
      occurred_at: new Date().toISOString(),
      sequence_number: String(++this.seq),
      dtmf: { digit },
    });
  }

  override mark(name: string): void {
    this.send({ event: 'mark', sequence_number: String(++this.seq), stream_id: TELNYX_STREAM, mark: { name } });
  }

  override stop(): void {
    this.send({
      event: 'stop',
      sequence_number: String(++this.seq),
      stop: { call_control_id: 'v3:call-control-id' },
      stream_id: TELNYX_STREAM,
    });
  }
}

export const TELNYX_STREAM = '32DE0DEA-53CB-4B21-89A4-9E1819C043BC';
