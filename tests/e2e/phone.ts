// A simulated telephony provider for the end-to-end tests, written from Twilio's and Telnyx's documented
// media-stream messages: it streams the caller as 20 ms μ-law frames, plays the gateway's answer on a
// simulated line (20 ms a chunk, in order) and echoes each mark once the audio before it has played, as
// Twilio and Telnyx do.
import WebSocket from 'ws';

/** 24 kHz PCM16 as 8 kHz μ-law (ITU-T G.711; every third sample: the test tones are far below 4 kHz). */
export function mulawOf(pcm: Buffer): Buffer {
  const out = Buffer.alloc(Math.floor(pcm.length / 6));
  for (let i = 0; i < out.length; i++) {
    let s = Math.max(-32635, Math.min(32635, pcm.readInt16LE(6 * i)));
    const sign = s < 0 ? 0x80 : 0;
    if (s < 0) s = -s;
    s += 0x84;
    let exponent = 7;
    for (let mask = 0x4000; (s & mask) === 0 && exponent > 0; exponent--, mask >>= 1);
    out[i] = ~(sign | (exponent << 4) | ((s >> (exponent + 3)) & 0x0f)) & 0xff;
  }
  return out;
}

/** μ-law silence: one 20 ms frame. */
export const MULAW_SILENCE = Buffer.alloc(160, 0xff);

/** One chunk of the answer as the simulated line played it: when it arrived and when it began to play. */
export interface Played {
  arrivedAt: number;
  playedAt: number;
  bytes: number;
}

export type PhoneProvider = 'twilio' | 'telnyx';

const STREAM = { twilio: 'MZ00000000000000000000000000000077', telnyx: '32DE0DEA-53CB-4B21-89A4-9E1819C04377' } as const;

/** A telephony provider's side of one call, as the gateway sees it. */
export class PhoneLine {
  readonly received: Record<string, any>[] = [];
  /** The answer's chunks, in order, with the simulated line's play-out times. */
  readonly played: Played[] = [];
  readonly closed: Promise<number>;
  private readonly ws: WebSocket;
  private seq = 0;
  private chunk = 0;
  /** When the simulated line has played everything it received so far. */
  private playedUntil = 0;

  constructor(
    url: string,
    readonly provider: PhoneProvider,
  ) {
    this.ws = new WebSocket(url, { perMessageDeflate: false });
    this.ws.on('message', (d) => this.onMessage(JSON.parse(d.toString()) as Record<string, any>));
    this.ws.on('error', () => {});
    this.closed = new Promise((resolve) => this.ws.on('close', (code) => resolve(code)));
  }

  /** Opens the stream: `connected`, then `start` with the client secret as its custom parameter. */
  async start(clientSecret: string): Promise<void> {
    await new Promise<void>((resolve, reject) => {
      this.ws.once('open', () => resolve());
      this.ws.once('unexpected-response', (_req, res) => reject(new Error(`refused ${res.statusCode}`)));
    });
    if (this.provider === 'twilio') {
      this.send({ event: 'connected', protocol: 'Call', version: '1.0.0' });
      this.send({
        event: 'start',
        sequenceNumber: String(++this.seq),
        start: {
          accountSid: 'AC00000000000000000000000000000077',
          streamSid: STREAM.twilio,
          callSid: 'CA00000000000000000000000000000077',
          tracks: ['inbound'],
          mediaFormat: { encoding: 'audio/x-mulaw', sampleRate: 8000, channels: 1 },
          customParameters: { client_secret: clientSecret },
        },
        streamSid: STREAM.twilio,
      });
    } else {
      this.send({ event: 'connected', version: '1.0.0' });
      this.send({
        event: 'start',
        sequence_number: String(++this.seq),
        stream_id: STREAM.telnyx,
        start: {
          user_id: '3E6F995F-85F7-4705-9741-53B116D28237',
          call_control_id: 'v3:call-control-id-77',
          call_session_id: 'ff55a038-6f5d-11ef-9692-02420aeffb77',
          from: '+13122010094',
          to: '+13122123456',
          custom_parameters: { client_secret: clientSecret },
          media_format: { encoding: 'PCMU', sample_rate: 8000, channels: 1 },
        },
      });
    }
  }

  /** One frame of the caller (μ-law). */
  media(payload: Buffer): void {
    this.chunk++;
    const media = { track: 'inbound', chunk: String(this.chunk), timestamp: String(this.chunk * 20), payload: payload.toString('base64') };
    if (this.provider === 'twilio') this.send({ event: 'media', sequenceNumber: String(++this.seq), media, streamSid: STREAM.twilio });
    else this.send({ event: 'media', sequence_number: String(++this.seq), media, stream_id: STREAM.telnyx });
  }

  stop(): void {
    if (this.provider === 'twilio')
      this.send({
        event: 'stop',
        sequenceNumber: String(++this.seq),
        stop: { accountSid: 'AC00000000000000000000000000000077', callSid: 'CA00000000000000000000000000000077' },
        streamSid: STREAM.twilio,
      });
    else
      this.send({
        event: 'stop',
        sequence_number: String(++this.seq),
        stop: { call_control_id: 'v3:call-control-id-77' },
        stream_id: STREAM.telnyx,
      });
  }

  of(event: string): Record<string, any>[] {
    return this.received.filter((m) => m.event === event);
  }

  terminate(): void {
    this.ws.terminate();
  }

  private send(m: unknown): void {
    if (this.ws.readyState === WebSocket.OPEN) this.ws.send(JSON.stringify(m));
  }

  private onMessage(m: Record<string, any>): void {
    this.received.push(m);
    const now = Date.now();
    if (m.event === 'media') {
      const bytes = Buffer.from(String(m.media?.payload ?? ''), 'base64').length;
      const playedAt = Math.max(now, this.playedUntil);
      this.playedUntil = playedAt + bytes / 8;
      this.played.push({ arrivedAt: now, playedAt, bytes });
    } else if (m.event === 'clear') {
      this.playedUntil = now;
    } else if (m.event === 'mark') {
      // The provider echoes a mark once the audio sent before it has played.
      const name = String(m.mark?.name ?? '');
      setTimeout(
        () => {
          if (this.provider === 'twilio')
            this.send({ event: 'mark', sequenceNumber: String(++this.seq), streamSid: STREAM.twilio, mark: { name } });
          else this.send({ event: 'mark', sequence_number: String(++this.seq), stream_id: STREAM.telnyx, mark: { name } });
        },
        Math.max(0, this.playedUntil - now),
      );
    }
  }
}

/** One answer as the line played it: the chunks between two marks (or a clear). */
export interface PlayedAnswer {
  /** When its first chunk arrived. */
  firstAt: number;
  /** The longest silence the caller heard inside it: a chunk that arrived after the one before it had played. */
  longestGapMs: number;
  bytes: number;
}

/** The answers the caller heard, in order. */
export function answersOf(line: PhoneLine): PlayedAnswer[] {
  const answers: PlayedAnswer[] = [];
  let current: PlayedAnswer | undefined;
  let previousEnd = 0;
  let media = 0;
  for (const m of line.received) {
    if (m.event === 'mark' || m.event === 'clear') {
      current = undefined;
      continue;
    }
    if (m.event !== 'media') continue;
    const p = line.played[media++]!;
    if (current === undefined) answers.push((current = { firstAt: p.arrivedAt, longestGapMs: 0, bytes: 0 }));
    else current.longestGapMs = Math.max(current.longestGapMs, p.playedAt - previousEnd);
    current.bytes += p.bytes;
    previousEnd = p.playedAt + p.bytes / 8;
  }
  return answers;
}
