import { z } from 'zod';

/**
 * Phone calls (decisions.md, "Phone calls: media streams (Twilio, Telnyx)"): the bidirectional media-stream
 * protocols of Twilio (`GET /v1/telephony/twilio`) and Telnyx (`GET /v1/telephony/telnyx`), written from
 * their documented messages. From the provider: `connected`, `start`, `media`, `dtmf`, `mark`, `stop` (and
 * Telnyx's `error`); to it: `media`, `mark`, `clear`. Audio is base64 G.711 μ-law at 8 kHz both ways.
 * Messages from a provider are read leniently (a member it adds later is ignored); ours are exact.
 */

/** The paths of the two media-stream endpoints on the public origin. */
export const TELEPHONY_PATHS = Object.freeze({ twilio: '/v1/telephony/twilio', telnyx: '/v1/telephony/telnyx' } as const);
export type TelephonyProvider = keyof typeof TELEPHONY_PATHS;

/** The custom parameter (TwiML / TeXML `<Parameter>`) that carries the `ek_` client secret. */
export const TELEPHONY_SECRET_PARAMETER = 'client_secret';
/** A stream whose start brings no valid secret within this long of the upgrade is closed with 1008. */
export const TELEPHONY_START_TIMEOUT_MS = 10_000;
/** Output media messages carry 20 ms of μ-law: 160 bytes. */
export const TELEPHONY_CHUNK_BYTES = 160;

/** Twilio's headers for its signature of the stream's URL (HMAC-SHA1, base64). */
export const TWILIO_SIGNATURE_HEADER = 'x-twilio-signature';
/** Telnyx's headers for its Ed25519 signature of `timestamp|body` (the body of an upgrade is empty). */
export const TELNYX_SIGNATURE_HEADER = 'telnyx-signature-ed25519';
export const TELNYX_TIMESTAMP_HEADER = 'telnyx-timestamp';

const Digits = z.string().regex(/^\d+$/);
/** Custom parameters: names and values are strings. */
const Parameters = z.record(z.string(), z.string());

// ---- Twilio Media Streams ----

export const TwilioConnected = z.object({ event: z.literal('connected'), protocol: z.string(), version: z.string() });

export const TwilioStart = z.object({
  event: z.literal('start'),
  sequenceNumber: Digits,
  streamSid: z.string().min(1),
  start: z.object({
    streamSid: z.string().min(1),
    accountSid: z.string(),
    callSid: z.string(),
    tracks: z.array(z.string()),
    customParameters: Parameters.optional(),
    mediaFormat: z.object({ encoding: z.string(), sampleRate: z.number(), channels: z.number() }),
  }),
});
export type TwilioStart = z.infer<typeof TwilioStart>;

export const TwilioMedia = z.object({
  event: z.literal('media'),
  sequenceNumber: Digits,
  streamSid: z.string(),
  media: z.object({ track: z.string(), chunk: Digits, timestamp: Digits, payload: z.string() }),
});
export type TwilioMedia = z.infer<typeof TwilioMedia>;

export const TwilioDtmf = z.object({
  event: z.literal('dtmf'),
  sequenceNumber: Digits,
  streamSid: z.string(),
  dtmf: z.object({ track: z.string(), digit: z.string().min(1).max(1) }),
});

export const TwilioMark = z.object({
  event: z.literal('mark'),
  sequenceNumber: Digits,
  streamSid: z.string(),
  mark: z.object({ name: z.string() }),
});

export const TwilioStop = z.object({
  event: z.literal('stop'),
  sequenceNumber: Digits,
  streamSid: z.string(),
  stop: z.object({ accountSid: z.string(), callSid: z.string() }),
});

export const TwilioInboundMessage = z.discriminatedUnion('event', [
  TwilioConnected,
  TwilioStart,
  TwilioMedia,
  TwilioDtmf,
  TwilioMark,
  TwilioStop,
]);
export type TwilioInboundMessage = z.infer<typeof TwilioInboundMessage>;

export const TwilioOutboundMedia = z.strictObject({
  event: z.literal('media'),
  streamSid: z.string(),
  media: z.strictObject({ payload: z.string() }),
});
export const TwilioOutboundMark = z.strictObject({
  event: z.literal('mark'),
  streamSid: z.string(),
  mark: z.strictObject({ name: z.string() }),
});
export const TwilioOutboundClear = z.strictObject({ event: z.literal('clear'), streamSid: z.string() });
export const TwilioOutboundMessage = z.discriminatedUnion('event', [TwilioOutboundMedia, TwilioOutboundMark, TwilioOutboundClear]);
export type TwilioOutboundMessage = z.infer<typeof TwilioOutboundMessage>;

// ---- Telnyx media streaming ----

export const TelnyxConnected = z.object({ event: z.literal('connected'), version: z.string() });

export const TelnyxStart = z.object({
  event: z.literal('start'),
  sequence_number: Digits,
  stream_id: z.string().min(1),
  start: z.object({
    user_id: z.string().optional(),
    call_control_id: z.string(),
    call_session_id: z.string().optional(),
    from: z.string().optional(),
    to: z.string().optional(),
    tags: z.array(z.string()).optional(),
    client_state: z.string().optional(),
    custom_parameters: Parameters.optional(),
    media_format: z.object({ encoding: z.string(), sample_rate: z.number(), channels: z.number() }),
  }),
});
export type TelnyxStart = z.infer<typeof TelnyxStart>;

export const TelnyxMedia = z.object({
  event: z.literal('media'),
  sequence_number: Digits,
  stream_id: z.string(),
  media: z.object({ track: z.string(), chunk: Digits, timestamp: Digits, payload: z.string() }),
});

export const TelnyxDtmf = z.object({
  event: z.literal('dtmf'),
  sequence_number: Digits,
  stream_id: z.string(),
  occurred_at: z.string().optional(),
  dtmf: z.object({ digit: z.string().min(1).max(1) }),
});

export const TelnyxMark = z.object({
  event: z.literal('mark'),
  sequence_number: Digits,
  stream_id: z.string(),
  mark: z.object({ name: z.string() }),
});

export const TelnyxStop = z.object({
  event: z.literal('stop'),
  sequence_number: Digits,
  stream_id: z.string(),
  stop: z.object({ user_id: z.string().optional(), call_control_id: z.string() }),
});

/** Telnyx reports a streaming error (a bad frame of ours, a playback failure) on the socket. */
export const TelnyxError = z.object({
  event: z.literal('error'),
  sequence_number: Digits.optional(),
  stream_id: z.string().optional(),
  payload: z.object({ code: z.number(), title: z.string(), detail: z.string().optional() }),
});

export const TelnyxInboundMessage = z.discriminatedUnion('event', [
  TelnyxConnected,
  TelnyxStart,
  TelnyxMedia,
  TelnyxDtmf,
  TelnyxMark,
  TelnyxStop,
  TelnyxError,
]);
export type TelnyxInboundMessage = z.infer<typeof TelnyxInboundMessage>;

export const TelnyxOutboundMedia = z.strictObject({ event: z.literal('media'), media: z.strictObject({ payload: z.string() }) });
export const TelnyxOutboundMark = z.strictObject({ event: z.literal('mark'), mark: z.strictObject({ name: z.string() }) });
export const TelnyxOutboundClear = z.strictObject({ event: z.literal('clear') });
export const TelnyxOutboundMessage = z.discriminatedUnion('event', [TelnyxOutboundMedia, TelnyxOutboundMark, TelnyxOutboundClear]);
export type TelnyxOutboundMessage = z.infer<typeof TelnyxOutboundMessage>;

// ---- Control sockets (decisions.md, "Control sockets (sideband)") ----

/** `GET /v1/realtime?call_id=<session id>`: the owning API key watches and steers a session whose media travels elsewhere. */
export const CONTROL_SOCKET_QUERY = 'call_id';

/** A DTMF digit of a phone call, to control sockets (OpenAI's event name and shape). */
export const DtmfEventReceivedEvent = z.strictObject({
  type: z.literal('input_audio_buffer.dtmf_event_received'),
  event_id: z.string().min(1).max(128),
  event: z.string().min(1).max(1),
  /** Unix seconds. */
  received_at: z.int(),
});
export type DtmfEventReceivedEvent = z.infer<typeof DtmfEventReceivedEvent>;

/** The transport that carries a session's media, as the console shows it. */
export const SessionTransport = z.enum(['websocket', 'twilio', 'telnyx', 'webrtc']);
export type SessionTransport = z.infer<typeof SessionTransport>;
