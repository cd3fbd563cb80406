import type { ClientCodec } from './events.js';

/** Who an attachment's codec speaks for: a dialect that names the session in its events needs it. */
export interface CodecSession {
  id: string;
  /** The catalog model id. */
  modelId: string;
  /** A phone stream's id (its provider's `streamSid` / `stream_id`), which its messages carry. */
  streamId?: string;
}

/**
 * One wire dialect as the registry (codecs/index.ts) knows it: its name, which the negotiation before the
 * upgrade answers (server/handshake.ts), and how a relay process gets each attachment its codec.
 */
export interface WireDialect<N extends string = string> {
  readonly name: N;
  /** Called once per relay process; the function it returns once per attachment. */
  codecs(): (session: CodecSession) => ClientCodec;
}
