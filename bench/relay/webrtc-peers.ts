// The WebRTC mode's callers (bench.ts --mode=webrtc), one process of them per load worker, forked by bench.ts
// and driven over IPC like its WebSocket load workers (open, record, stop), so that the relay's CPU is measured
// alone. Each call is a headless werift peer that offers what the browser stand-in of @s2s/webrtc/testing offers
// (one Opus track sendrecv and the `oai-events` data channel), POSTs the offer to the relay's
// `/v1/realtime/calls` with its session's `ek_` secret, and once the session is created on the channel sends a
// 20 ms Opus packet every 20 ms. The packet is encoded once (a 440 Hz tone) and sent again with the next
// sequence number and timestamp: a caller's own encoding is not the relay's work. Every packet the relay plays
// back on the track answers the oldest packet sent and not yet answered (echo-stream echoes each 20 ms frame).
// A call starts streaming once its first packet has come back (Call.dial).
import OpusScript from 'opusscript';
import { MediaStreamTrack, RTCPeerConnection, RtpHeader, RtpPacket, useOPUS } from 'werift';

/** What bench.ts sends for one call: the relay's calls URL and the call's client secret. */
interface CallDial {
  url: string;
  secret: string | null;
}

interface Share {
  dials: CallDial[];
  offsetsMs: number[];
}

const FRAME_MS = 20;
/**
 * Calls set up at once. One: on the shared 2-core machine (load 30) five concurrent setups from one process were
 * all answered (201) but none saw session.created within 60 s, while one at a time each took about 3 s. That run
 * predates d0c78f2 (opusscript's PCM views corrupted the shared WebAssembly heap once several coders were alive;
 * services/relay/test/calls-concurrent.test.ts now sets up five at once); raise this once a run shows it holds.
 */
const SETUP_BATCH = 1;
const now = () => performance.now();

function opusFrame(): Buffer {
  const encoder = new OpusScript(48_000, 1, OpusScript.Application.VOIP);
  const pcm = Buffer.alloc(1920);
  for (let i = 0; i < 960; i++) pcm.writeInt16LE(Math.round(8000 * Math.sin((2 * Math.PI * 440 * i) / 48_000)), 2 * i);
  const packet = Buffer.from(encoder.encode(pcm, 960));
  encoder.delete();
  return packet;
}
const PACKET = opusFrame();

class Call {
  readonly pc = new RTCPeerConnection({ bundlePolicy: 'max-bundle', iceUseIpv6: false, codecs: { audio: [useOPUS()], video: [] } });
  private readonly mic = new MediaStreamTrack({ kind: 'audio' });
  sent = 0;
  received = 0;
  private inflight: number[] = [];
  private head = 0;
  private seq = 1;
  private ts = 1000;
  timer: NodeJS.Timeout | null = null;
  private ready: () => void = () => {};
  private echoed: () => void = () => {};
  readonly created = new Promise<void>((r) => (this.ready = r));

  constructor(private readonly latencies: Samples) {
    const tr = this.pc.addTransceiver(this.mic, { direction: 'sendrecv' });
    tr.onTrack.subscribe((track) => track.onReceiveRtp.subscribe(() => this.answered()));
    const channel = this.pc.createDataChannel('oai-events');
    channel.onMessage.subscribe((m) => {
      if (m.toString().includes('"session.created"')) this.ready();
    });
  }

  async dial(d: CallDial): Promise<void> {
    await this.pc.setLocalDescription(await this.pc.createOffer());
    const res = await fetch(d.url, {
      method: 'POST',
      headers: { 'Content-Type': 'application/sdp', Authorization: `Bearer ${d.secret ?? ''}` },
      body: this.pc.localDescription!.sdp,
    });
    if (res.status !== 201) throw new Error(`the relay answered the offer with ${res.status}: ${await res.text()}`);
    await this.pc.setRemoteDescription({ type: 'answer', sdp: await res.text() });
    await within(this.created, 60_000, 'session.created');
    // One packet's echo first: until the upstream is open the relay holds the caller's audio, and what it then
    // answers at once would stay queued in its real-time output for the whole call (the echo never pauses).
    this.send();
    await within(new Promise<void>((r) => (this.echoed = r)), 30_000, 'the first echo');
  }

  send(): void {
    this.inflight.push(now());
    this.sent++;
    const header = new RtpHeader({ payloadType: 111, sequenceNumber: this.seq++ & 0xffff, timestamp: (this.ts += 960) >>> 0, ssrc: 42 });
    this.mic.writeRtp(new RtpPacket(header, PACKET));
  }

  private answered(): void {
    const t0 = this.inflight[this.head++];
    this.received++;
    this.echoed();
    if (t0 !== undefined && this.latencies.recording) this.latencies.values.push(now() - t0);
    if (this.head > 1024) {
      this.inflight = this.inflight.slice(this.head);
      this.head = 0;
    }
  }
}

interface Samples {
  recording: boolean;
  values: number[];
}

class Peers {
  private calls: Call[] = [];
  private readonly samples: Samples = { recording: false, values: [] };
  private recv0 = 0;

  async open(share: Share): Promise<void> {
    this.samples.values = [];
    this.calls = [];
    for (let i = 0; i < share.dials.length; i += SETUP_BATCH) {
      const batch = share.dials.slice(i, i + SETUP_BATCH).map((d) => {
        const c = new Call(this.samples);
        this.calls.push(c);
        return c.dial(d);
      });
      await Promise.all(batch);
    }
    this.calls.forEach((c, i) => {
      c.timer = setTimeout(() => {
        c.send();
        c.timer = setInterval(() => c.send(), FRAME_MS);
      }, share.offsetsMs[i]);
    });
  }

  record(): void {
    this.recv0 = this.calls.reduce((s, c) => s + c.received, 0);
    this.samples.recording = true;
  }

  async stop(): Promise<{ frames: number; lost: number; latencies: number[] }> {
    this.samples.recording = false;
    const frames = this.calls.reduce((s, c) => s + c.received, 0) - this.recv0;
    for (const c of this.calls) if (c.timer) clearInterval(c.timer);
    const deadline = now() + 5000;
    while (now() < deadline && this.calls.some((c) => c.received < c.sent)) await sleep(20);
    const lost = this.calls.reduce((s, c) => s + (c.sent - c.received), 0);
    // Hanging up closes the call; the relay ends and settles its session.
    await Promise.all(this.calls.map((c) => c.pc.close().catch(() => undefined)));
    this.calls = [];
    return { frames, lost, latencies: this.samples.values };
  }
}

function within<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  return Promise.race([p, sleep(ms).then(() => Promise.reject(new Error(`no ${what} within ${ms / 1000} s`)))]);
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

const peers = new Peers();
process.on('message', (m: { id: number; cmd: string; arg: unknown }) => {
  const reply = (result: unknown) => process.send?.({ id: m.id, result });
  const run = async (): Promise<unknown> => {
    if (m.cmd === 'open') return peers.open(m.arg as Share);
    if (m.cmd === 'record') return peers.record();
    if (m.cmd === 'stop') return peers.stop();
    throw new Error(`unknown command ${m.cmd}`);
  };
  run().then(reply, (err: unknown) => {
    process.stderr.write(`webrtc peers: ${String((err as Error)?.stack ?? err)}\n`);
    process.exit(1);
  });
});
