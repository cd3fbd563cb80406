import type { ClientCodec } from './events.js';
import type { CodecSession } from './dialect.js';
import { openaiDialect } from './openai/codec.js';
import { svcRealtimeV1Dialect } from './svc-realtime-v1/codec.js';
import { telnyxDialect } from './telnyx/codec.js';
import { twilioDialect } from './twilio/codec.js';

/** Every wire dialect the relay speaks: a new dialect is its folder and a line here. */
export const DIALECTS = [svcRealtimeV1Dialect, openaiDialect, twilioDialect, telnyxDialect] as const;

/** The wire dialect of an attachment; the relay picks its client codec by it. */
export type Dialect = (typeof DIALECTS)[number]['name'];

/** One relay process's codecs: each attachment gets its dialect's. */
export function createCodecs(): (dialect: Dialect, session: CodecSession) => ClientCodec {
  const byName = new Map(DIALECTS.map((d) => [d.name as Dialect, d.codecs()]));
  return (dialect, session) => {
    const codecFor = byName.get(dialect);
    if (codecFor === undefined) throw new Error(`wire dialect ${dialect} is not registered`);
    return codecFor(session);
  };
}
