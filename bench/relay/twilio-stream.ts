// The phone mode's client (bench.ts --mode=phone): what Twilio sends on a bidirectional Media Stream
// (`<Connect><Stream>`), written from its documented messages as @s2s/contract types them: `connected`, a
// `start` whose custom parameters carry the `ek_` client secret, 20 ms `media` frames of μ-law at 8 kHz with
// their sequence numbers, chunks and timestamps, the `mark` Twilio returns when the audio before it has played,
// and `stop`.
import { G711_FRAME_BYTES, G711_FRAME_MS, G711Encoder } from '@s2s/audio';
import { TELEPHONY_SECRET_PARAMETER, type TwilioInboundMessage } from '@s2s/contract';

const ACCOUNT_SID = 'ACbench';

/** A stream's fixed names: Twilio's `MZ…` stream and `CA…` call ids. */
export interface TwilioIds {
  streamSid: string;
  callSid: string;
}

export const twilioIds = (i: number): TwilioIds => ({
  streamSid: `MZbench${String(i).padStart(26, '0')}`,
  callSid: `CAbench${String(i).padStart(26, '0')}`,
});

const json = (m: TwilioInboundMessage): string => JSON.stringify(m);

export const twilioConnected = (): string => json({ event: 'connected', protocol: 'Call', version: '1.0.0' });

export function twilioStart(ids: TwilioIds, secret: string): string {
  return json({
    event: 'start',
    sequenceNumber: '1',
    streamSid: ids.streamSid,
    start: {
      streamSid: ids.streamSid,
      accountSid: ACCOUNT_SID,
      callSid: ids.callSid,
      tracks: ['inbound'],
      customParameters: { [TELEPHONY_SECRET_PARAMETER]: secret },
      mediaFormat: { encoding: 'audio/x-mulaw', sampleRate: 8000, channels: 1 },
    },
  });
}

/**
 * The `k`-th media message (k from 0) after the start: sequence number k + 2, chunk k + 1, timestamp in ms
 * since the stream began. Written as a template (the load generator sends thousands a second); the test in
 * bench/test checks it against the contract's schema.
 */
export function twilioMedia(ids: TwilioIds, k: number, payloadBase64: string): string {
  return (
    `{"event":"media","sequenceNumber":"${k + 2}","streamSid":"${ids.streamSid}",` +
    `"media":{"track":"inbound","chunk":"${k + 1}","timestamp":"${k * G711_FRAME_MS}","payload":"${payloadBase64}"}}`
  );
}

/** Twilio's answer to one of our marks: the same name, once the audio before it has played. */
export const twilioMark = (ids: TwilioIds, sequenceNumber: number, name: string): string =>
  json({ event: 'mark', sequenceNumber: String(sequenceNumber), streamSid: ids.streamSid, mark: { name } });

export const twilioStop = (ids: TwilioIds, sequenceNumber: number): string =>
  json({
    event: 'stop',
    sequenceNumber: String(sequenceNumber),
    streamSid: ids.streamSid,
    stop: { accountSid: ACCOUNT_SID, callSid: ids.callSid },
  });

const MEDIA_HEAD = Buffer.from('{"event":"media"');
const MARK_HEAD = Buffer.from('{"event":"mark"');

/** A message from the gateway: `media` (the answer, 20 ms of μ-law), `mark`, or anything else (`clear`). */
export function twilioOutboundKind(data: Buffer): 'media' | 'mark' | 'other' {
  if (data.subarray(0, MEDIA_HEAD.length).equals(MEDIA_HEAD)) return 'media';
  if (data.subarray(0, MARK_HEAD.length).equals(MARK_HEAD)) return 'mark';
  return 'other';
}

/** The name of an outbound mark. */
export const markName = (data: Buffer): string => (JSON.parse(data.toString()) as { mark: { name: string } }).mark.name;

/** 20 ms of a 440 Hz tone as μ-law at 8 kHz (160 bytes), base64: the caller's voice of every frame. */
export function muLawFrameBase64(): string {
  const pcm = Buffer.alloc(G711_FRAME_BYTES * 6);
  for (let i = 0; i < pcm.length / 2; i++) pcm.writeInt16LE(Math.round(3000 * Math.sin((2 * Math.PI * 440 * i) / 24000)), i * 2);
  const frame = new G711Encoder('pcmu').push(pcm);
  if (frame.length !== G711_FRAME_BYTES) throw new Error(`a 20 ms frame encoded to ${frame.length} bytes`);
  return frame.toString('base64');
}
