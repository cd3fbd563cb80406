// The browser entry (bundlers' "browser" condition): nothing here imports Node. The Node entry (index.ts)
// re-exports all of it and adds the `ws` socket.
export { S2SClient, type S2SClientOptions, type CreateSessionInput } from './client.js';
export {
  RealtimeConnection,
  connectRealtime,
  audioMs,
  type CloseInfo,
  type ConnectOptions,
  type ServerEventType,
  type ServerEventOf,
  type ClientEventType,
  type ClientEventOf,
} from './realtime.js';
export { RealtimeEvents, type EventOf, type ToolCall, type ToolHandler } from './events.js';
export {
  RealtimeCall,
  type OpenCallOptions,
  type CallStats,
  type CallEnd,
  type CallClientEvent,
  type CallServerEvent,
  type CallServerEventOf,
  type PostOffer,
  type MediaTrackLike,
  type MediaStreamLike,
  type DataChannelLike,
  type PeerConnectionLike,
  type PeerConnectionConstructor,
  type PlaybackElementLike,
  type StatsReportLike,
} from './call.js';
export { S2SError, S2SApiError, S2SConnectionError, S2SRealtimeClosedError } from './errors.js';
export { billOf, USAGE_COUNTERS, type Bill, type UsageCounters } from './bill.js';
export {
  SAMPLE_RATE,
  BYTES_PER_MS,
  DEFAULT_FRAME_MS,
  pcmBytes,
  pcmSamples,
  pcmDurationMs,
  toBase64,
  fromBase64,
  chunkPcm,
  audioAppendEvents,
  decodeWav,
  encodeWav,
  toGatewayPcm,
  type PcmInput,
  type WavAudio,
} from './audio.js';
export type { SocketLike, BrowserWebSocketConstructor } from './websocket.js';
// The contract's types, so that a user of the client needs no second import.
export type {
  ClientEvent,
  ServerEvent,
  VoiceSession,
  Model,
  ModelList,
  Pricing,
  ErrorResponse,
  ClientSecret,
  CreateRealtimeClientSecretRequest,
  RealtimeClientSecretResponse,
  ResponseUsage,
  SessionUpdateEvent,
  EndReason,
  OpenAiSessionView,
  WebRtcServerEvent,
} from '@s2s/contract';
