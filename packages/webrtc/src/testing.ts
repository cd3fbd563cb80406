// Test helpers for the packages that use this one (`@s2s/webrtc/testing`): a werift browser stand-in and a UDP hop.

import { createSocket, type Socket } from 'node:dgram';
import OpusScript from 'opusscript';
import { withPcmViewsInPlace } from './opus.js';
import { MediaStreamTrack, RTCPeerConnection, RtpHeader, RtpPacket, useOPUS, type RTCDataChannel, type RtpPacket as Rtp } from 'werift';

/**
 * A browser stand-in: a full-ICE werift peer that offers what Chromium offers (one Opus track
 * sendrecv and the `oai-events` channel), sends Opus at 48 kHz like a browser and decodes what it gets.
 */
export class BrowserPeer {
  readonly pc = new RTCPeerConnection({ bundlePolicy: 'max-bundle', iceUseIpv6: false, codecs: { audio: [useOPUS()], video: [] } });
  readonly mic = new MediaStreamTrack({ kind: 'audio' });
  readonly channel: RTCDataChannel;
  readonly received: { at: number; rtp: Rtp }[] = [];
  readonly messages: string[] = [];
  private readonly encoder = withPcmViewsInPlace(new OpusScript(48_000, 1, OpusScript.Application.VOIP));
  private readonly decoder = withPcmViewsInPlace(new OpusScript(48_000, 1, OpusScript.Application.VOIP));
  private seq = 1;
  private ts = 1000;

  constructor(label = 'oai-events') {
    const tr = this.pc.addTransceiver(this.mic, { direction: 'sendrecv' });
    tr.onTrack.subscribe((track) => track.onReceiveRtp.subscribe((rtp) => this.received.push({ at: performance.now(), rtp })));
    this.channel = this.pc.createDataChannel(label);
    this.channel.onMessage.subscribe((m) => this.messages.push(m.toString()));
  }

  async offer(): Promise<string> {
    await this.pc.setLocalDescription(await this.pc.createOffer());
    return this.pc.localDescription!.sdp;
  }

  async accept(answer: string): Promise<void> {
    await this.pc.setRemoteDescription({ type: 'answer', sdp: answer });
  }

  connected(timeoutMs = 8000): Promise<void> {
    return waitFor(() => this.channel.readyState === 'open', timeoutMs, 'browser data channel open');
  }

  /** Sends `ms` of a 440 Hz tone (amplitude 0: silence) as 20 ms Opus packets at 48 kHz, in real time. */
  async speak(ms: number, amplitude = 8000): Promise<void> {
    for (let t = 0; t < ms; t += 20) {
      const pcm = Buffer.alloc(1920);
      for (let i = 0; i < 960; i++) pcm.writeInt16LE(Math.round(amplitude * Math.sin((2 * Math.PI * 440 * (t * 48 + i)) / 48_000)), 2 * i);
      const payload = Buffer.from(this.encoder.encode(pcm, 960));
      this.mic.writeRtp(
        new RtpPacket(
          new RtpHeader({ payloadType: 111, sequenceNumber: this.seq++ & 0xffff, timestamp: (this.ts += 960) >>> 0, ssrc: 42 }),
          payload,
        ),
      );
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  /** PCM16 48 kHz of every packet received so far. */
  heard(): Buffer {
    return Buffer.concat(this.received.map(({ rtp }) => Buffer.from(this.decoder.decode(rtp.payload))));
  }

  async close(): Promise<void> {
    this.encoder.delete();
    this.decoder.delete();
    await this.pc.close();
  }
}

/** Which way a datagram crosses the hop: from the endpoint to the browser stand-in, or back. */
export type HopDirection = 'to_browser' | 'to_endpoint';

/**
 * Sees every datagram that crosses the hop; returning false drops it (a lossy network). The hop's tests read
 * DTLS record headers with it and drop chosen records.
 */
export type HopFilter = (data: Buffer, direction: HopDirection) => boolean;

/** A UDP hop between the browser stand-in and the endpoint that the test can cut, as a network would. */
export class UdpHop {
  private clientAddr: { address: string; port: number } | undefined;
  private constructor(
    private readonly socket: Socket,
    private readonly target: number,
    filter: HopFilter,
  ) {
    socket.on('message', (data, rinfo) => {
      if (rinfo.port === target && rinfo.address === '127.0.0.1') {
        if (this.clientAddr && filter(data, 'to_browser')) socket.send(data, this.clientAddr.port, this.clientAddr.address);
      } else {
        this.clientAddr = { address: rinfo.address, port: rinfo.port };
        if (filter(data, 'to_endpoint')) socket.send(data, target, '127.0.0.1');
      }
    });
  }

  static async open(target: number, filter: HopFilter = () => true): Promise<UdpHop> {
    const socket = createSocket('udp4');
    await new Promise<void>((r) => socket.bind(0, '127.0.0.1', () => r()));
    return new UdpHop(socket, target, filter);
  }

  get port(): number {
    return this.socket.address().port;
  }

  cut(): void {
    this.socket.removeAllListeners('message');
  }

  close(): void {
    this.socket.close();
  }
}

export async function waitFor(check: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!check()) {
    if (performance.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** Root mean square of PCM16 samples. */
export function rms(pcm: Buffer): number {
  let sum = 0;
  const n = Math.floor(pcm.length / 2);
  for (let i = 0; i < n; i++) sum += pcm.readInt16LE(2 * i) ** 2;
  return n === 0 ? 0 : Math.sqrt(sum / n);
}

/** The dominant frequency by zero crossings (Hz). */
export function zeroCrossingHz(pcm: Buffer, rateHz: number): number {
  let crossings = 0;
  const n = Math.floor(pcm.length / 2);
  for (let i = 1; i < n; i++) if (pcm.readInt16LE(2 * i - 2) < 0 !== pcm.readInt16LE(2 * i) < 0) crossings++;
  return (crossings / 2) * (rateHz / n);
}
