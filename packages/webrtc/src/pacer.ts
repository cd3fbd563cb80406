import { FRAME_BYTES, FRAME_MS, RTP_TICKS_PER_FRAME } from './opus.js';

/** Where the pacer's frames go: one 20 ms PCM16 frame at a time, in real time. */
export interface PacerSink {
  /** `marker` starts a talkspurt (RFC 3551); `rtpTimestamp` is on Opus's 48 kHz clock. */
  frame(pcm: Buffer, marker: boolean, rtpTimestamp: number): void;
  /** The first frame of a talkspurt left (output_audio_buffer.started). */
  started(): void;
  /** Everything queued before `end()` has been played (output_audio_buffer.stopped). */
  stopped(): void;
}

export interface PacerClock {
  now(): number;
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

const realClock: PacerClock = {
  now: () => performance.now(),
  setTimeout: (fn, ms) => setTimeout(fn, ms),
  clearTimeout: (h) => clearTimeout(h as NodeJS.Timeout),
};

/** When the event loop falls further behind than this, the schedule restarts instead of bursting. */
const MAX_CATCH_UP_FRAMES = 3;

/**
 * Plays PCM16 24 kHz out in 20 ms frames at the pace of a clock, so the peer's jitter buffer sees real
 * time and a barge-in can cut what has not been heard yet. Counts the audio bytes actually sent: what
 * was played, and what `clear()` dropped.
 */
export class OutputPacer {
  private queue: Buffer[] = [];
  private queuedBytes = 0;
  private ending = false;
  private playing = false;
  private nextDue = 0;
  private timer: unknown;
  private rtpTimestamp = Math.floor(Math.random() * 0x100000000);
  private lastFrameAt: number | undefined;
  private talkspurtStart = false;
  /** Bytes of audio sent on the track since the pacer was made (padding excluded). */
  playedBytes = 0;

  constructor(
    private readonly sink: PacerSink,
    private readonly clock: PacerClock = realClock,
  ) {}

  /** Queues audio (any length); playback starts at once if it was idle. */
  push(pcm: Buffer): void {
    if (pcm.length === 0) return;
    this.queue.push(pcm);
    this.queuedBytes += pcm.length;
    this.ending = false;
    if (!this.playing) this.start();
  }

  /** No more audio for now: play the tail (padded to a whole frame), then report `stopped`. */
  end(): void {
    this.ending = true;
    if (!this.playing) return;
    if (this.queuedBytes === 0) this.finish();
  }

  /** Drops what was not played yet; returns the bytes dropped. No `stopped`: the caller reports `cleared`. */
  clear(): number {
    const dropped = this.queuedBytes;
    this.queue = [];
    this.queuedBytes = 0;
    this.ending = false;
    this.halt();
    return dropped;
  }

  get isPlaying(): boolean {
    return this.playing;
  }

  get queuedMs(): number {
    return Math.ceil(this.queuedBytes / (FRAME_BYTES / FRAME_MS));
  }

  close(): void {
    this.clear();
  }

  private start(): void {
    const now = this.clock.now();
    // The RTP clock keeps wall time across the silence, so the peer's playout stays in step.
    if (this.lastFrameAt !== undefined) {
      const silentFrames = Math.max(0, Math.round((now - this.lastFrameAt) / FRAME_MS) - 1);
      this.rtpTimestamp = (this.rtpTimestamp + silentFrames * RTP_TICKS_PER_FRAME) >>> 0;
    }
    this.playing = true;
    this.talkspurtStart = true;
    this.nextDue = now;
    this.tick();
  }

  private tick(): void {
    this.timer = undefined;
    if (!this.playing) return;
    const now = this.clock.now();
    if (now - this.nextDue > MAX_CATCH_UP_FRAMES * FRAME_MS) this.nextDue = now;
    while (this.playing && this.nextDue <= now) {
      this.sendOne();
      this.nextDue += FRAME_MS;
    }
    if (this.playing) this.timer = this.clock.setTimeout(() => this.tick(), Math.max(0, this.nextDue - this.clock.now()));
  }

  private sendOne(): void {
    if (this.queuedBytes < FRAME_BYTES && !this.ending) {
      // Underrun: the provider is slower than real time. The timestamp moves on; the peer conceals the gap.
      this.rtpTimestamp = (this.rtpTimestamp + RTP_TICKS_PER_FRAME) >>> 0;
      return;
    }
    if (this.queuedBytes === 0) return this.finish();
    const real = Math.min(FRAME_BYTES, this.queuedBytes);
    const frame = Buffer.alloc(FRAME_BYTES);
    let filled = 0;
    while (filled < real) {
      const head = this.queue[0]!;
      const take = Math.min(head.length, real - filled);
      head.copy(frame, filled, 0, take);
      filled += take;
      if (take === head.length) this.queue.shift();
      else this.queue[0] = head.subarray(take);
    }
    this.queuedBytes -= real;
    this.playedBytes += real;
    const marker = this.talkspurtStart;
    this.talkspurtStart = false;
    this.lastFrameAt = this.clock.now();
    if (marker) this.sink.started();
    this.sink.frame(frame, marker, this.rtpTimestamp);
    this.rtpTimestamp = (this.rtpTimestamp + RTP_TICKS_PER_FRAME) >>> 0;
    if (this.queuedBytes === 0 && this.ending) this.finish();
  }

  private finish(): void {
    this.ending = false;
    this.halt();
    this.sink.stopped();
  }

  private halt(): void {
    this.playing = false;
    if (this.timer !== undefined) this.clock.clearTimeout(this.timer);
    this.timer = undefined;
  }
}
