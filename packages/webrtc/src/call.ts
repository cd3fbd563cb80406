import { RtpHeader, RtpPacket, type MediaStreamTrack, type RTCDataChannel, type RTCPeerConnection, type RTCRtpTransceiver } from 'werift';
import { OpusDecoder, OpusEncoder, PCM_RATE_HZ } from './opus.js';
import { OutputPacer } from './pacer.js';
import { ReceiveStats } from './receive-stats.js';
import type { MuxProtocol } from './udp-mux.js';

/** The data channel the OpenAI dialect travels on; any other channel the peer opens is ignored. */
export const EVENTS_CHANNEL = 'oai-events';

/**
 * `connecting` until ICE and DTLS are up; `disconnected` when nothing arrived for `livenessMs`
 * (it may come back); `failed` (terminal) when it never connected within `connectTimeoutMs`, stayed
 * disconnected for `failAfterMs`, or DTLS failed; `closed` (terminal) when either side closed.
 */
export type CallState = 'connecting' | 'connected' | 'disconnected' | 'failed' | 'closed';

/** Why a call failed, for metrics: ICE never completed or went silent, or DTLS failed (a fingerprint mismatch). */
export type CallFailure = 'ice' | 'dtls';

export interface CallHandlers {
  /** Decoded input, PCM16 24 kHz mono, one Opus packet at a time (20 ms from a browser). */
  audio?(pcm: Buffer): void;
  /** A message on `oai-events` within the size limit: a string for a text message, a Buffer for binary. */
  message?(data: string | Buffer): void;
  /** A message over the size limit, dropped unread. */
  oversize?(bytes: number): void;
  state?(state: CallState, failure?: CallFailure): void;
  /** The first output frame of a talkspurt went out (`output_audio_buffer.started`). */
  outputStarted?(): void;
  /** The output queued before `endAudio()` has all been played (`output_audio_buffer.stopped`). */
  outputStopped?(): void;
}

export interface CallStats {
  readonly state: CallState;
  readonly packetsReceived: number;
  readonly packetsLost: number;
  readonly lossRatio: number;
  readonly jitterMs: number;
  /** Packets libopus refused. */
  readonly decodeFailures: number;
  /** Milliseconds of input decoded (PCM16 24 kHz bytes / 48). */
  readonly audioInMs: number;
  /** Milliseconds of output sent on the track. */
  readonly audioOutMs: number;
}

export interface CallTiming {
  connectTimeoutMs: number;
  livenessMs: number;
  failAfterMs: number;
  maxMessageBytes: number;
}

/** Messages sent before the channel opens wait here, up to this many. */
const MAX_PENDING_MESSAGES = 256;
const BYTES_PER_MS = (PCM_RATE_HZ * 2) / 1000;

/** One browser's call: its peer connection, one Opus track each way and the `oai-events` channel. */
export class WebRtcCall {
  private handlers: CallHandlers = {};
  private stateValue: CallState = 'connecting';
  private readonly decoder = new OpusDecoder();
  private readonly encoder = new OpusEncoder();
  private readonly stats = new ReceiveStats();
  private readonly pacer: OutputPacer;
  private channel: RTCDataChannel | undefined;
  private pending: string[] = [];
  private decodedBytes = 0;
  private decodeFailures = 0;
  private sequenceNumber = Math.floor(Math.random() * 0x10000);
  private readonly timers: NodeJS.Timeout[] = [];
  private disconnectedAt: number | undefined;
  private iceConnected = false;

  /** @internal Made by WebRtcEndpoint.answer. */
  constructor(
    private readonly pc: RTCPeerConnection,
    private readonly transceiver: RTCRtpTransceiver,
    private readonly protocols: readonly MuxProtocol[],
    private readonly timing: CallTiming,
    private readonly onFinished: (call: WebRtcCall, state: CallState, failure?: CallFailure) => void,
  ) {
    this.pacer = new OutputPacer({
      frame: (pcm, marker, timestamp) => this.sendFrame(pcm, marker, timestamp),
      started: () => this.handlers.outputStarted?.(),
      stopped: () => this.handlers.outputStopped?.(),
    });
    const listened = new Set<MediaStreamTrack>();
    const listen = (track: MediaStreamTrack) => {
      if (listened.has(track)) return;
      listened.add(track);
      track.onReceiveRtp.subscribe((rtp) => this.receiveRtp(rtp));
    };
    for (const track of transceiver.receiver.tracks) listen(track);
    transceiver.onTrack.subscribe((track) => listen(track));
    pc.onDataChannel.subscribe((channel) => this.adoptChannel(channel));
    pc.iceConnectionStateChange.subscribe((s) => {
      if (s === 'connected' || s === 'completed') this.iceConnected = true;
    });
    pc.connectionStateChange.subscribe((s) => {
      if (s === 'connected') this.setState('connected');
      else if (s === 'failed') this.finish('failed', this.iceConnected ? 'dtls' : 'ice');
      else if (s === 'closed' && this.stateValue !== 'failed') this.finish('closed');
    });
    for (const dtls of pc.dtlsTransports) {
      dtls.onStateChange.subscribe((s) => {
        if (s === 'failed') this.finish('failed', 'dtls');
        else if (s === 'closed' && this.stateValue === 'connected') this.finish('closed');
      });
    }
    this.timers.push(
      setTimeout(() => {
        if (this.stateValue === 'connecting') this.finish('failed', this.iceConnected ? 'dtls' : 'ice');
      }, timing.connectTimeoutMs),
      setInterval(() => this.checkLiveness(), Math.min(1000, timing.livenessMs)),
    );
    for (const t of this.timers) t.unref();
  }

  setHandlers(handlers: CallHandlers): void {
    this.handlers = handlers;
  }

  get state(): CallState {
    return this.stateValue;
  }

  /** Queues output PCM16 24 kHz; it is encoded and sent in 20 ms packets in real time. */
  playAudio(pcm: Buffer): void {
    if (this.isOver()) return;
    this.pacer.push(pcm);
  }

  /** No more output for now: the tail is played, then `outputStopped`. */
  endAudio(): void {
    this.pacer.end();
  }

  /** Drops the output not yet played (barge-in); returns the milliseconds dropped. */
  clearAudio(): number {
    return Math.floor(this.pacer.clear() / BYTES_PER_MS);
  }

  get outputPlaying(): boolean {
    return this.pacer.isPlaying;
  }

  /** Milliseconds of output sent on the track so far (what the peer has been given to play). */
  get playedMs(): number {
    return Math.floor(this.pacer.playedBytes / BYTES_PER_MS);
  }

  /** Bytes of PCM16 24 kHz output sent on the track so far. */
  get playedBytes(): number {
    return this.pacer.playedBytes;
  }

  /** Sends one text message on `oai-events` (held until the channel opens). */
  send(text: string): void {
    if (this.isOver()) return;
    const ch = this.channel;
    if (ch !== undefined && ch.readyState === 'open') {
      ch.send(text);
      return;
    }
    if (this.pending.length < MAX_PENDING_MESSAGES) this.pending.push(text);
  }

  getStats(): CallStats {
    return {
      state: this.stateValue,
      packetsReceived: this.stats.packetsReceived,
      packetsLost: this.stats.packetsLost,
      lossRatio: this.stats.lossRatio,
      jitterMs: this.stats.jitterMs,
      decodeFailures: this.decodeFailures,
      audioInMs: Math.floor(this.decodedBytes / BYTES_PER_MS),
      audioOutMs: this.playedMs,
    };
  }

  /** Closes the peer connection (DTLS close_notify reaches the peer); state `closed`. */
  async close(): Promise<void> {
    this.finish('closed');
  }

  private isOver(): boolean {
    return this.stateValue === 'failed' || this.stateValue === 'closed';
  }

  private receiveRtp(rtp: RtpPacket): void {
    if (this.isOver()) return;
    if (!this.stats.record(rtp.header.sequenceNumber, rtp.header.timestamp, performance.now())) return;
    const pcm = this.decoder.decode(rtp.payload);
    if (pcm === undefined) {
      this.decodeFailures++;
      return;
    }
    const audio = this.handlers.audio;
    if (audio === undefined) return;
    this.decodedBytes += pcm.length;
    audio(pcm);
  }

  private sendFrame(pcm: Buffer, marker: boolean, timestamp: number): void {
    if (this.isOver()) return;
    const payload = this.encoder.encode(pcm);
    const header = new RtpHeader({ sequenceNumber: this.sequenceNumber, timestamp, marker, payloadType: 0, ssrc: 0 });
    this.sequenceNumber = (this.sequenceNumber + 1) & 0xffff;
    // werift's sender sets the negotiated payload type and its SSRC.
    this.transceiver.sender.sendRtp(new RtpPacket(header, payload)).catch(() => undefined);
  }

  private adoptChannel(channel: RTCDataChannel): void {
    // Another channel is left unread: the contract has one, and closing it races the peer's DCEP.
    if (channel.label !== EVENTS_CHANNEL || this.channel !== undefined) return;
    this.channel = channel;
    channel.onMessage.subscribe((data) => {
      const bytes = typeof data === 'string' ? Buffer.byteLength(data) : data.length;
      if (bytes > this.timing.maxMessageBytes) this.handlers.oversize?.(bytes);
      else this.handlers.message?.(data);
    });
    const flush = () => {
      const queued = this.pending;
      this.pending = [];
      for (const text of queued) channel.send(text);
    };
    if (channel.readyState === 'open') flush();
    channel.stateChanged.subscribe((s) => {
      if (s === 'open') flush();
      // The peer closed its channel or its connection (an SCTP reset or abort): the call is over.
      else if (s === 'closed') this.finish('closed');
    });
  }

  private checkLiveness(): void {
    if (this.stateValue !== 'connected' && this.stateValue !== 'disconnected') return;
    const now = performance.now();
    const last = Math.max(0, ...this.protocols.map((p) => p.lastReceivedAt));
    if (now - last < this.timing.livenessMs) {
      this.disconnectedAt = undefined;
      if (this.stateValue === 'disconnected') this.setState('connected');
      return;
    }
    if (this.disconnectedAt === undefined) {
      this.disconnectedAt = now;
      this.setState('disconnected');
    } else if (now - this.disconnectedAt >= this.timing.failAfterMs) {
      this.finish('failed', 'ice');
    }
  }

  private setState(state: CallState, failure?: CallFailure): void {
    if (this.stateValue === state || this.isOver()) return;
    this.stateValue = state;
    this.handlers.state?.(state, failure);
  }

  private finish(state: 'failed' | 'closed', failure?: CallFailure): void {
    if (this.isOver()) return;
    this.setState(state, failure);
    for (const t of this.timers) clearTimeout(t);
    this.pacer.close();
    this.decoder.close();
    this.encoder.close();
    this.pending = [];
    this.onFinished(this, state, failure);
    this.pc.close().catch(() => undefined);
  }
}
