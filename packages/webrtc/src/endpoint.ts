import { networkInterfaces } from 'node:os';
import { SdpOfferError, type SdpOfferProblem } from '@s2s/core';
import { MediaStreamTrack, RTCPeerConnection, useOPUS } from 'werift';
import { WebRtcCall, type CallFailure, type CallState, type CallStats, type CallTiming } from './call.js';
import { checkOffer } from './offer.js';
import { UdpMux, type DropReason } from './udp-mux.js';
import { bindToMux } from './werift-mux.js';

export interface WebRtcEndpointOptions {
  /** The UDP port every call shares (WEBRTC_UDP_PORT); 0 picks a free one (tests). */
  port: number;
  /**
   * The address the socket binds. Default: the first announced address when it is one of this host's (a reply
   * then leaves from the address the peer expects, which a socket bound to every interface cannot promise on
   * a host with several), otherwise every IPv4 interface (a public address behind NAT).
   */
  host?: string;
  /** The addresses written as ICE candidates (WEBRTC_ANNOUNCED_ADDRESSES); default this host's interfaces. */
  announcedAddresses?: readonly string[];
  /** The largest `oai-events` message taken, in bytes (REALTIME_MAX_EVENT_BYTES); also advertised in the SDP. */
  maxMessageBytes?: number;
  connectTimeoutMs?: number;
  livenessMs?: number;
  failAfterMs?: number;
}

/** What a finished call saw of its incoming audio (for the relay's jitter histogram). */
export type CallEnded = (stats: CallStats, state: CallState, failure?: CallFailure) => void;

/** Counters for the relay's metrics; monotonic. */
export interface EndpointCounters {
  callsAnswered: number;
  callsConnected: number;
  iceFailures: number;
  dtlsFailures: number;
  /** Incoming RTP packets of ended calls. */
  packetsReceived: number;
  packetsLost: number;
  offersRefused: Record<SdpOfferProblem, number>;
  datagramsDropped: Record<DropReason, number>;
}

const DEFAULTS: CallTiming = { connectTimeoutMs: 10_000, livenessMs: 3_000, failAfterMs: 10_000, maxMessageBytes: 1024 * 1024 };

/**
 * A relay's WebRTC media termination: one UDP port, ICE-lite, DTLS-SRTP and SCTP by werift, Opus by
 * libopus. `answer()` checks an offer and returns the SDP answer with its call.
 */
export class WebRtcEndpoint {
  readonly counters: EndpointCounters = {
    callsAnswered: 0,
    callsConnected: 0,
    iceFailures: 0,
    dtlsFailures: 0,
    packetsReceived: 0,
    packetsLost: 0,
    offersRefused: { malformed: 0, too_large: 0, no_audio: 0, no_data_channel: 0, unsupported_codec: 0, no_ice_credentials: 0 },
    datagramsDropped: { garbage: 0, unknown_ufrag: 0, bad_integrity: 0, unknown_address: 0 },
  };
  private readonly live = new Set<WebRtcCall>();
  /** Called once per call when it fails or closes. */
  onCallEnded: CallEnded | undefined;

  private constructor(
    private readonly mux: UdpMux,
    readonly announcedAddresses: readonly string[],
    private readonly timing: CallTiming,
    dropped: Record<DropReason, number>,
  ) {
    this.counters.datagramsDropped = dropped;
  }

  static async start(opts: WebRtcEndpointOptions): Promise<WebRtcEndpoint> {
    const announced = opts.announcedAddresses?.length ? opts.announcedAddresses : interfaceAddresses();
    const timing: CallTiming = {
      connectTimeoutMs: opts.connectTimeoutMs ?? DEFAULTS.connectTimeoutMs,
      livenessMs: opts.livenessMs ?? DEFAULTS.livenessMs,
      failAfterMs: opts.failAfterMs ?? DEFAULTS.failAfterMs,
      maxMessageBytes: opts.maxMessageBytes ?? DEFAULTS.maxMessageBytes,
    };
    const dropped: Record<DropReason, number> = { garbage: 0, unknown_ufrag: 0, bad_integrity: 0, unknown_address: 0 };
    const mux = await UdpMux.listen({ port: opts.port, host: opts.host ?? bindAddress(announced), onDrop: (reason) => dropped[reason]++ });
    return new WebRtcEndpoint(mux, announced, timing, dropped);
  }

  get port(): number {
    return this.mux.port;
  }

  /** Calls not yet failed or closed. */
  get liveCalls(): number {
    return this.live.size;
  }

  /** Checks the offer (SdpOfferError, a 400, when it is refused) and answers it. */
  async answer(offer: string): Promise<{ sdp: string; call: WebRtcCall }> {
    try {
      checkOffer(offer);
    } catch (err) {
      if (err instanceof SdpOfferError) this.counters.offersRefused[err.problem]++;
      throw err;
    }
    const pc = new RTCPeerConnection({
      iceLite: true,
      iceUseIpv6: false,
      codecs: { audio: [useOPUS()], video: [] },
      maxMessageSize: this.timing.maxMessageBytes,
    });
    try {
      await pc.setRemoteDescription({ type: 'offer', sdp: offer });
    } catch {
      await pc.close().catch(() => undefined);
      this.counters.offersRefused.malformed++;
      throw new SdpOfferError('malformed', 'The SDP offer could not be applied.');
    }
    const transceiver = pc.getTransceivers().find((t) => t.kind === 'audio');
    if (transceiver === undefined) {
      await pc.close().catch(() => undefined);
      this.counters.offersRefused.no_audio++;
      throw new SdpOfferError('no_audio', 'The SDP offer has no audio section; offer one Opus audio track.');
    }
    transceiver.setDirection('sendrecv');
    await transceiver.sender.replaceTrack(new MediaStreamTrack({ kind: 'audio' }));
    const protocols = bindToMux(pc, this.mux, this.announcedAddresses);
    await pc.setLocalDescription(await pc.createAnswer());
    const call = new WebRtcCall(pc, transceiver, protocols, this.timing, (c, state, failure) => this.finished(c, state, failure));
    pc.connectionStateChange.subscribe((s) => {
      if (s === 'connected') this.counters.callsConnected++;
    });
    this.live.add(call);
    this.counters.callsAnswered++;
    return { sdp: pc.localDescription!.sdp, call };
  }

  /** Closes every call and the port. */
  async close(): Promise<void> {
    await Promise.all([...this.live].map((c) => c.close()));
    await this.mux.close();
  }

  private finished(call: WebRtcCall, state: CallState, failure?: CallFailure): void {
    this.live.delete(call);
    const stats = call.getStats();
    this.counters.packetsReceived += stats.packetsReceived;
    this.counters.packetsLost += stats.packetsLost;
    this.onCallEnded?.(stats, state, failure);
    if (state !== 'failed') return;
    if (failure === 'dtls') this.counters.dtlsFailures++;
    else this.counters.iceFailures++;
  }
}

function bindAddress(announced: readonly string[]): string {
  const first = announced[0];
  const local = Object.values(networkInterfaces()).some((list) => (list ?? []).some((i) => i.address === first));
  return first !== undefined && local && !first.includes(':') ? first : '0.0.0.0';
}

/** This host's non-internal IPv4 addresses; the loopback address when it has none. */
function interfaceAddresses(): string[] {
  const found: string[] = [];
  for (const list of Object.values(networkInterfaces())) {
    for (const info of list ?? []) if (info.family === 'IPv4' && !info.internal) found.push(info.address);
  }
  return found.length > 0 ? found : ['127.0.0.1'];
}
