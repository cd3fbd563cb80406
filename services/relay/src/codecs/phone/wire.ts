/**
 * A telephony provider's media-stream messages, read into one neutral form and written from it: the phone
 * codec (codec.ts) and the stream's start (server/phone.ts) see no provider's field names. One per provider
 * (codecs/twilio, codecs/telnyx).
 */
export type PhoneInbound =
  | { kind: 'connected' }
  | { kind: 'start'; streamId: string; callId: string; parameters: Readonly<Record<string, string>>; encoding: string; sampleRate: number }
  /** `track` `outbound` is the far end's echo of what we sent (both tracks streamed): not the caller. */
  | { kind: 'media'; track: string; payload: string }
  | { kind: 'dtmf'; digit: string }
  | { kind: 'mark'; name: string }
  | { kind: 'stop' }
  /** Telnyx reports a streaming error of its own. */
  | { kind: 'error'; code: number; title: string }
  /** Not JSON, an unknown event, or a known one of the wrong shape. */
  | { kind: 'invalid'; reason: string };

export interface PhoneWire {
  readonly provider: 'twilio' | 'telnyx';
  /** The encoding name of G.711 μ-law in this provider's start message. */
  readonly mulaw: string;
  parse(text: string): PhoneInbound;
  media(streamId: string, payloadBase64: string): string;
  mark(streamId: string, name: string): string;
  clear(streamId: string): string;
}

/** The messages both providers shape alike (Twilio's and Telnyx's documentation), whatever else they carry. */
type SharedMessage =
  | { event: 'connected' }
  | { event: 'media'; media: { track: string; payload: string } }
  | { event: 'dtmf'; dtmf: { digit: string } }
  | { event: 'mark'; mark: { name: string } }
  | { event: 'stop' };

/**
 * One provider message read into the neutral form: JSON, then the provider's schema (`invalid` with the
 * reason otherwise), then `own` for the messages the provider shapes its own way, which hands the others to
 * `shared`.
 */
export function readInbound<M extends { event: string }>(
  text: string,
  schema: { safeParse(v: unknown): { success: true; data: M } | { success: false } },
  known: readonly string[],
  own: (m: M, shared: (m: SharedMessage) => PhoneInbound) => PhoneInbound,
): PhoneInbound {
  const msg = jsonOf(text);
  const parsed = schema.safeParse(msg);
  if (!parsed.success) return { kind: 'invalid', reason: invalidReason(msg, known) };
  return own(parsed.data, sharedInbound);
}

function sharedInbound(m: SharedMessage): PhoneInbound {
  switch (m.event) {
    case 'connected':
      return { kind: 'connected' };
    case 'media':
      return { kind: 'media', track: m.media.track, payload: m.media.payload };
    case 'dtmf':
      return { kind: 'dtmf', digit: m.dtmf.digit };
    case 'mark':
      return { kind: 'mark', name: m.mark.name };
    case 'stop':
      return { kind: 'stop' };
  }
}

/** One message's text as JSON, or null. */
function jsonOf(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}

/** The refusal reason of a message that is not one of the provider's (unknown event, wrong shape). */
function invalidReason(msg: unknown, known: readonly string[]): string {
  if (typeof msg !== 'object' || msg === null) return 'The message is not a JSON object.';
  const event = (msg as { event?: unknown }).event;
  if (typeof event !== 'string' || !known.includes(event)) return `Unknown event ${JSON.stringify(event ?? null).slice(0, 64)}.`;
  return `Invalid ${event} message.`;
}
