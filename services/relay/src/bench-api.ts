// What bench/relay drives in-process (the package's "./bench" export): the relay's own code per frame
// (hot-path.ts), the checkpointer (checkpoints.ts), continuity's retained input (retention.ts) and ws's frame
// options (ws-frame-options.ts), each hot trick against its plain code (hot-tricks.ts), the phone codec per frame
// (phone-codec.ts), apart from sockets and processes. Keep it to what a benchmark names.
export { Audio, checkBase64 } from './audio.js';
export { continuityOf, loadConfig } from './config.js';
export { PhoneCodec } from './codecs/phone/codec.js';
export { twilioWire } from './codecs/twilio/wire.js';
export { audioDeltaFrame, AudioDeltaHeads, audioDeltaPrefix } from './hot/audio-delta.js';
export { EventIds } from './hot/event-ids.js';
export { FlatMemo, FlatShape } from './hot/flat-json.js';
export { asciiBytes } from './hot/frame-bytes.js';
export { holdWsFrameOptions } from './hot/ws-frame-options.js';
export { Checkpointer, type CheckpointTicket, type MeteredSource } from './metering/checkpoints.js';
export { UsageMeter } from './metering/usage-meter.js';
export { OpenAIRealtimeAdapter } from './providers/openai/adapter.js';
export { ProviderBase } from './providers/shared/base.js';
export { DEFAULT_CONTINUITY } from './providers/shared/continuity.js';
export type { UpstreamConnection } from './providers/shared/types.js';
export { UpstreamSession } from './providers/shared/upstream-session.js';
export { Relay } from './relay.js';
export { RelayTelemetry } from './telemetry.js';
export type { UpstreamOpener } from './upstream/opener.js';
