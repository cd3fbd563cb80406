import type { WireDialect } from '../dialect.js';
import { PhoneCodec } from '../phone/codec.js';
import { twilioWire } from './wire.js';

/** Twilio Media Streams at `GET /v1/telephony/twilio` (server/phone.ts): one codec per stream. */
export const twilioDialect = {
  name: 'twilio',
  codecs: () => (session) => new PhoneCodec(twilioWire, session.streamId ?? ''),
} as const satisfies WireDialect;
