import type { WireDialect } from '../dialect.js';
import { PhoneCodec } from '../phone/codec.js';
import { telnyxWire } from './wire.js';

/** Telnyx media streaming at `GET /v1/telephony/telnyx` (server/phone.ts): one codec per stream. */
export const telnyxDialect = {
  name: 'telnyx',
  codecs: () => (session) => new PhoneCodec(telnyxWire, session.streamId ?? ''),
} as const satisfies WireDialect;
