import {
  WEBRTC_EVENTS_CHANNEL,
  WebRtcServerEvent,
  type OpenAiClientEvent,
  type OpenAiSessionUpdateEvent,
  type OpenAiSessionView,
} from '@s2s/contract';
import { S2SError } from './errors.js';
import { parseServerEvent, RealtimeEvents, settleUpdate, type EventOf } from './events.js';

// The browser's WebRTC objects, as far as the client uses them (the package compiles without the DOM types;
// a page's RTCPeerConnection, MediaStream and MediaStreamTrack have all of these).

/** A MediaStreamTrack. */
export interface MediaTrackLike {
  readonly kind: string;
}
/** A MediaStream. */
export interface MediaStreamLike {
  getAudioTracks(): MediaTrackLike[];
}
/** An RTCDataChannel. */
export interface DataChannelLike {
  readonly readyState: string;
  send(data: string): void;
  close(): void;
  onopen: ((ev: unknown) => void) | null;
  onmessage: ((ev: { data: unknown }) => void) | null;
  onclose: ((ev: unknown) => void) | null;
}
/** One report of RTCPeerConnection.getStats(). */
export type StatsReportLike = Record<string, unknown> & { type: string };
/** An RTCPeerConnection. */
export interface PeerConnectionLike {
  readonly connectionState: string;
  readonly localDescription: { sdp: string } | null;
  createDataChannel(label: string): DataChannelLike;
  addTrack(track: never, ...streams: never[]): unknown;
  addTransceiver(kind: 'audio', init: { direction: 'sendrecv' | 'recvonly' }): unknown;
  createOffer(): Promise<{ type: string; sdp?: string | undefined }>;
  setLocalDescription(description: { type: string; sdp?: string | undefined }): Promise<void>;
  setRemoteDescription(description: { type: 'answer'; sdp: string }): Promise<void>;
  getStats(): Promise<{ forEach(fn: (report: StatsReportLike) => void): void }>;
  close(): void;
  ontrack: ((ev: { track: MediaTrackLike; streams: readonly unknown[] }) => void) | null;
  onconnectionstatechange: ((ev: unknown) => void) | null;
}
export type PeerConnectionConstructor = new (configuration?: object) => PeerConnectionLike;
/** An element that plays a stream: an `<audio>` (or `<video>`) element. */
export interface PlaybackElementLike {
  srcObject: unknown;
}

/** What the client sends on a call's channel: the OpenAI dialect's client events (audio goes on the track). */
export type CallClientEvent = OpenAiClientEvent;
/** What a call's channel carries from the server. */
export type CallServerEvent = WebRtcServerEvent;
export type CallServerEventOf<T extends CallServerEvent['type']> = EventOf<CallServerEvent, T>;

/** Why a call ended. */
export interface CallEnd {
  /** `hangup`: this side hung up; `closed`: the gateway closed the channel; `failed`: the connection failed. */
  reason: 'hangup' | 'closed' | 'failed';
}

/**
 * What the page sees of the call's audio (getStats, RTCInboundRtpStreamStats of the remote track): the
 * answer's packets as they arrived, their jitter and loss; the microphone's packets sent; the round trip.
 */
export interface CallStats {
  inbound: {
    packetsReceived: number;
    packetsLost: number;
    /** packetsLost / (packetsReceived + packetsLost), in percent. */
    lossPercent: number;
    /** The interarrival jitter (RFC 3550), in milliseconds. */
    jitterMs: number;
    totalSamplesReceived: number;
    concealedSamples: number;
  } | null;
  outbound: { packetsSent: number; bytesSent: number } | null;
  /** The selected candidate pair's current round trip, in milliseconds. */
  roundTripMs: number | null;
}

export interface OpenCallOptions {
  /** The `ek_` client secret your backend minted (docs/browsers.md). */
  credential: string;
  /** The microphone: a MediaStream (its first audio track is sent) or a MediaStreamTrack. None: receive only. */
  microphone?: MediaStreamLike | MediaTrackLike | undefined;
  /**
   * Where the answer plays: an `<audio>` element, or `false` to play nothing (read `remoteTrack`). Default:
   * a new autoplaying `<audio>` element, not attached to the document.
   */
  audio?: PlaybackElementLike | false | undefined;
  /** An RTCPeerConnection constructor instead of the environment's. */
  RTCPeerConnection?: PeerConnectionConstructor | undefined;
  /** The peer connection's configuration (ICE servers …). */
  rtcConfiguration?: object | undefined;
  /** Check every server event against the contract's schema; a mismatch ends the call. */
  validate?: boolean | undefined;
  /** How long to wait for `session.created` (default 15 s). */
  timeoutMs?: number | undefined;
}

/** What the call needs of the HTTP API: the offer posted, the answer and the call's id back. */
export type PostOffer = (sdp: string) => Promise<{ sdp: string; callId: string }>;

/**
 * A WebRTC call with the gateway (decisions.md, "WebRTC"), from a browser: the microphone goes up an Opus
 * track, the answer comes down the remote track, and the `oai-events` channel carries the OpenAI dialect's
 * events both ways, with the same listeners and helpers as a socket (`on`, `waitFor`, `send`, `sendText`,
 * `createResponse`, `handleToolCalls`). Made by `S2SClient.realtime.call`, which resolves at `session.created`.
 */
export class RealtimeCall extends RealtimeEvents<CallServerEvent, CallClientEvent> {
  /** The OpenAI-shaped session of `session.created`. */
  session!: OpenAiSessionView;
  /** The call's id, from the answer's `Location`: its voice session's id. */
  callId = '';
  /** Resolves when the call has ended, whichever side ended it. */
  readonly ended: Promise<CallEnd>;

  readonly #pc: PeerConnectionLike;
  readonly #channel: DataChannelLike;
  readonly #url: string;
  readonly #validate: boolean;
  #remoteTrack: MediaTrackLike | null = null;
  #end: CallEnd | null = null;
  #failure: S2SError | null = null;
  #resolveEnded!: (end: CallEnd) => void;

  /** @internal Use `S2SClient.realtime.call`. */
  constructor(pc: PeerConnectionLike, url: string, validate: boolean, playback: PlaybackElementLike | null) {
    super();
    this.#pc = pc;
    this.#url = url;
    this.#validate = validate;
    this.ended = new Promise((resolve) => (this.#resolveEnded = resolve));
    // As OpenAI's SDKs do: the channel first, so the application section leads the offer.
    this.#channel = pc.createDataChannel(WEBRTC_EVENTS_CHANNEL);
    this.#channel.onmessage = (ev) => this.#receive(ev.data);
    this.#channel.onclose = () => this.#finish({ reason: 'closed' });
    pc.ontrack = (ev) => {
      if (ev.track.kind !== 'audio' || this.#remoteTrack !== null) return;
      this.#remoteTrack = ev.track;
      if (playback) playback.srcObject = ev.streams[0] ?? streamOf(ev.track);
    };
    pc.onconnectionstatechange = () => {
      if (pc.connectionState === 'failed') this.#finish({ reason: 'failed' });
      else if (pc.connectionState === 'closed') this.#finish({ reason: 'closed' });
    };
  }

  /** The calls URL the offer went to. */
  get url(): string {
    return this.#url;
  }

  get isOpen(): boolean {
    return this.#end === null && this.#channel.readyState === 'open';
  }

  /** The answer's audio track (a MediaStreamTrack), once it has arrived. */
  get remoteTrack(): MediaTrackLike | null {
    return this.#remoteTrack;
  }

  /** The RTCPeerConnection itself. */
  get peerConnection(): PeerConnectionLike {
    return this.#pc;
  }

  protected get isEnded(): boolean {
    return this.#end !== null;
  }

  protected transmit(text: string): void {
    this.#channel.send(text);
  }

  /**
   * `session.update` in the OpenAI dialect (`type: "realtime"` is added), resolved with the effective
   * settings of `session.updated`, or rejected with the refusal naming `error.param`.
   */
  updateSession(
    session: Omit<OpenAiSessionUpdateEvent['session'], 'type'>,
    opts: { timeoutMs?: number } = {},
  ): Promise<CallServerEventOf<'session.updated'>['session']> {
    const updated = this.waitFor('session.updated', opts);
    return settleUpdate(this, this.send({ type: 'session.update', session: { ...session, type: 'realtime' } }), updated);
  }

  /** Stops the answer playing (`output_audio_buffer.clear`); the gateway answers `output_audio_buffer.cleared`. */
  clearOutput(): void {
    this.send({ type: 'output_audio_buffer.clear' });
  }

  /** Jitter and loss of the answer's track, and the microphone's packets, as this peer measures them. */
  async getStats(): Promise<CallStats> {
    const stats: CallStats = { inbound: null, outbound: null, roundTripMs: null };
    (await this.#pc.getStats()).forEach((s) => {
      if (s.type === 'inbound-rtp' && s.kind === 'audio') {
        const received = num(s.packetsReceived);
        const lost = Math.max(0, num(s.packetsLost));
        stats.inbound = {
          packetsReceived: received,
          packetsLost: lost,
          lossPercent: received + lost === 0 ? 0 : (100 * lost) / (received + lost),
          jitterMs: num(s.jitter) * 1000,
          totalSamplesReceived: num(s.totalSamplesReceived),
          concealedSamples: num(s.concealedSamples),
        };
      } else if (s.type === 'outbound-rtp' && s.kind === 'audio') {
        stats.outbound = { packetsSent: num(s.packetsSent), bytesSent: num(s.bytesSent) };
      } else if (s.type === 'candidate-pair' && s.nominated === true && typeof s.currentRoundTripTime === 'number') {
        stats.roundTripMs = s.currentRoundTripTime * 1000;
      }
    });
    return stats;
  }

  /**
   * Hangs up: closes the channel and the peer connection. The gateway ends the session (`client_closed`)
   * and settles it; your backend reads the bill (`GET /v1/voice/sessions/{id}`). The microphone's tracks
   * stay the page's to stop.
   */
  hangup(): Promise<CallEnd> {
    if (this.#end === null) {
      this.#channel.close();
      this.#pc.close();
      this.#finish({ reason: 'hangup' });
    }
    return this.ended;
  }

  /** @internal Offers, posts the offer, applies the answer, and resolves at `session.created`. */
  async open(microphone: OpenCallOptions['microphone'], postOffer: PostOffer, timeoutMs: number): Promise<this> {
    try {
      const track = microphone === undefined ? undefined : 'getAudioTracks' in microphone ? microphone.getAudioTracks()[0] : microphone;
      if (track) this.#pc.addTrack(track as never);
      else this.#pc.addTransceiver('audio', { direction: 'recvonly' });
      const created = this.waitFor('session.created', { timeoutMs });
      created.catch(() => undefined);
      await this.#pc.setLocalDescription(await this.#pc.createOffer());
      const answer = await postOffer(this.#pc.localDescription?.sdp ?? '');
      this.callId = answer.callId;
      await this.#pc.setRemoteDescription({ type: 'answer', sdp: answer.sdp });
      // The contract's union types session.created of both dialects; this channel carries OpenAI's.
      this.session = (await created).session as OpenAiSessionView;
      return this;
    } catch (err) {
      void this.hangup();
      throw this.#failure ?? err;
    }
  }

  protected closedError(): S2SError {
    return (
      this.#failure ?? new S2SError(`call ${this.#url}: ${this.#end ? `ended (${this.#end.reason})` : 'not open'}`, { url: this.#url })
    );
  }

  #finish(end: CallEnd): void {
    if (this.#end !== null) return;
    this.#end = end;
    if (end.reason !== 'hangup') this.#pc.close();
    this.notifyEnded();
    this.#resolveEnded(end);
  }

  #receive(data: unknown): void {
    const event = parseServerEvent<CallServerEvent>(data, this.#validate ? WebRtcServerEvent : null);
    if (typeof event === 'string') {
      this.#failure ??= new S2SError(`call ${this.#url}: ${event}`, { url: this.#url });
      void this.hangup();
      return;
    }
    this.dispatch(event);
  }
}

/** Opens a WebRTC call: the peer connection, the offer through `postOffer`, and `session.created`. */
export function openCall(url: string, opts: OpenCallOptions, postOffer: PostOffer): Promise<RealtimeCall> {
  const Peer = opts.RTCPeerConnection ?? (globalThis as { RTCPeerConnection?: PeerConnectionConstructor }).RTCPeerConnection;
  if (!Peer) throw new S2SError(`call ${url}: no RTCPeerConnection here (a browser has one; elsewhere pass RTCPeerConnection)`, { url });
  const call = new RealtimeCall(new Peer(opts.rtcConfiguration), url, opts.validate ?? false, playbackFor(opts.audio));
  return call.open(opts.microphone, postOffer, opts.timeoutMs ?? 15_000);
}

/** The element the answer plays in: the one given, none, or a new autoplaying `<audio>` where there is a document. */
function playbackFor(audio: OpenCallOptions['audio']): PlaybackElementLike | null {
  if (audio === false) return null;
  if (audio !== undefined) return audio;
  const doc = (globalThis as { document?: { createElement(tag: 'audio'): PlaybackElementLike & { autoplay: boolean } } }).document;
  if (!doc) return null;
  const element = doc.createElement('audio');
  element.autoplay = true;
  return element;
}

function streamOf(track: MediaTrackLike): unknown {
  const Stream = (globalThis as { MediaStream?: new (tracks: MediaTrackLike[]) => unknown }).MediaStream;
  return Stream ? new Stream([track]) : null;
}

function num(value: unknown): number {
  return typeof value === 'number' && Number.isFinite(value) ? value : 0;
}
