export { WebRtcEndpoint, type WebRtcEndpointOptions, type EndpointCounters, type CallEnded } from './endpoint.js';
export { WebRtcCall, EVENTS_CHANNEL, type CallHandlers, type CallState, type CallFailure, type CallStats } from './call.js';
export { checkOffer, MAX_OFFER_BYTES, type OfferSummary } from './offer.js';
export { OutputPacer, type PacerSink, type PacerClock } from './pacer.js';
export { ReceiveStats } from './receive-stats.js';
export { OpusDecoder, OpusEncoder, FRAME_MS, FRAME_BYTES, PCM_RATE_HZ } from './opus.js';
export { WebRtcPeer, type PeerHandlers } from './peer.js';
export type { DropReason } from './udp-mux.js';
