import { RtpHeader, RtpPacket, RTCPeerConnection, useOPUS, type RTCDataChannel, type RTCRtpTransceiver } from 'werift';
import { EVENTS_CHANNEL } from './call.js';
import { OpusDecoder, OpusEncoder } from './opus.js';
import { OutputPacer } from './pacer.js';

export interface PeerHandlers {
  /** A message on the `oai-events` channel. */
  message?(text: string): void;
  /** The remote track's audio, one decoded packet at a time, as PCM16 24 kHz mono. */
  audio?(pcm: Buffer): void;
  /** The peer connection failed or closed, or the channel closed. */
  closed?(): void;
}

/**
 * The calling side of a WebRTC call, for programs (the CLI): a full-ICE werift peer that offers what a
 * browser offers (the `oai-events` channel, then one Opus track sendrecv), speaks PCM16 24 kHz as Opus paced in
 * real time, and hands back the remote track's audio decoded to PCM16 24 kHz.
 */
export class WebRtcPeer {
  private readonly pc = new RTCPeerConnection({ bundlePolicy: 'max-bundle', iceUseIpv6: false, codecs: { audio: [useOPUS()], video: [] } });
  private readonly channel: RTCDataChannel;
  private readonly transceiver: RTCRtpTransceiver;
  private readonly encoder = new OpusEncoder();
  private readonly decoder = new OpusDecoder();
  private readonly pacer: OutputPacer;
  private handlers: PeerHandlers = {};
  private sequenceNumber = Math.floor(Math.random() * 0x10000);
  private spoken: (() => void) | undefined;
  private over = false;
  private closing: Promise<void> | undefined;

  constructor() {
    // As the browser SDKs do: the channel first, so the application section leads the offer.
    this.channel = this.pc.createDataChannel(EVENTS_CHANNEL);
    this.transceiver = this.pc.addTransceiver('audio', { direction: 'sendrecv' });
    this.pacer = new OutputPacer({
      frame: (pcm, marker, timestamp) => this.sendFrame(pcm, marker, timestamp),
      started: () => undefined,
      stopped: () => this.spoken?.(),
    });
    this.transceiver.onTrack.subscribe((track) =>
      track.onReceiveRtp.subscribe((rtp) => {
        const pcm = this.decoder.decode(rtp.payload);
        if (pcm !== undefined) this.handlers.audio?.(pcm);
      }),
    );
    this.channel.onMessage.subscribe((data) => this.handlers.message?.(typeof data === 'string' ? data : data.toString('utf8')));
    this.channel.stateChanged.subscribe((s) => {
      if (s === 'closed') this.finish();
    });
    this.pc.connectionStateChange.subscribe((s) => {
      if (s === 'failed' || s === 'closed') this.finish();
    });
  }

  setHandlers(handlers: PeerHandlers): void {
    this.handlers = handlers;
  }

  /** The SDP offer, to post to `/v1/realtime/calls`. */
  async offer(): Promise<string> {
    await this.pc.setLocalDescription(await this.pc.createOffer());
    return this.pc.localDescription!.sdp;
  }

  /** Applies the gateway's SDP answer; resolves once the channel is open (ICE, DTLS and SCTP are up). */
  async accept(answer: string, timeoutMs = 10_000): Promise<void> {
    await this.pc.setRemoteDescription({ type: 'answer', sdp: answer });
    if (this.channel.readyState === 'open') return;
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        sub.unSubscribe();
        reject(new Error(`the call did not connect within ${timeoutMs} ms (ICE, DTLS or SCTP)`));
      }, timeoutMs);
      const sub = this.channel.stateChanged.subscribe((s) => {
        if (s !== 'open') return;
        clearTimeout(timer);
        sub.unSubscribe();
        resolve();
      });
    });
  }

  /** Sends one event on the channel. */
  send(text: string): void {
    if (!this.over) this.channel.send(text);
  }

  /** Speaks PCM16 24 kHz on the track in real time (20 ms Opus packets); resolves once all of it was sent. */
  speak(pcm: Buffer): Promise<void> {
    if (this.over || pcm.length === 0) return Promise.resolve();
    const done = new Promise<void>((resolve) => (this.spoken = resolve));
    this.pacer.push(pcm);
    this.pacer.end();
    return done;
  }

  get isOpen(): boolean {
    return !this.over && this.channel.readyState === 'open';
  }

  /** Closes the channel and the peer connection (the gateway sees the call end); resolves once closed. */
  async close(): Promise<void> {
    this.finish();
    await this.closing;
  }

  private sendFrame(pcm: Buffer, marker: boolean, timestamp: number): void {
    if (this.over) return;
    const header = new RtpHeader({ sequenceNumber: this.sequenceNumber, timestamp, marker, payloadType: 0, ssrc: 0 });
    this.sequenceNumber = (this.sequenceNumber + 1) & 0xffff;
    // werift's sender sets the negotiated payload type and its SSRC.
    this.transceiver.sender.sendRtp(new RtpPacket(header, this.encoder.encode(pcm))).catch(() => undefined);
  }

  /** The call is over, whichever side ended it: the peer connection is closed too (its timers and socket go). */
  private finish(): void {
    if (this.over) return;
    this.over = true;
    this.pacer.close();
    this.spoken?.();
    this.encoder.close();
    this.decoder.close();
    this.closing = this.pc.close().catch(() => undefined);
    this.handlers.closed?.();
  }
}
