import { BYTES_PER_MS, VAD_RMS_THRESHOLD, VAD_WINDOW_MS } from './protocol.js';

export type VadEvent =
  | { type: 'speech_started'; startMs: number }
  /** `speechEndMs`: end of the last speech window; `turnEndMs`: where the silence reached its duration. */
  | { type: 'turn_ended'; startMs: number; speechEndMs: number; turnEndMs: number };

const WINDOW_BYTES = VAD_WINDOW_MS * BYTES_PER_MS;

/**
 * Energy VAD over fixed 10 ms windows counted from the start of the stream, so the result depends only on
 * the audio, never on how it was cut into frames. Positions are milliseconds of input since the session
 * began (the same clock as `audio_start_ms` / `audio_end_ms` of the OpenAI protocol).
 */
export class EnergyVad {
  private carry: Buffer = Buffer.alloc(0);
  private positionMs = 0;
  private speaking = false;
  private startMs = 0;
  private speechEndMs = 0;

  constructor(public silenceDurationMs: number) {}

  /** Milliseconds of input consumed so far (whole windows only). */
  get processedMs(): number {
    return this.positionMs;
  }

  /** Start of the speech segment in progress, or null when there is none. */
  get speechStartMs(): number | null {
    return this.speaking ? this.startMs : null;
  }

  push(pcm: Buffer): VadEvent[] {
    const data = this.carry.length > 0 ? Buffer.concat([this.carry, pcm]) : pcm;
    const events: VadEvent[] = [];
    let offset = 0;
    for (; offset + WINDOW_BYTES <= data.length; offset += WINDOW_BYTES) {
      const loud = windowRms(data, offset) >= VAD_RMS_THRESHOLD;
      const windowStart = this.positionMs;
      this.positionMs += VAD_WINDOW_MS;
      if (loud) {
        if (!this.speaking) {
          this.speaking = true;
          this.startMs = windowStart;
          events.push({ type: 'speech_started', startMs: windowStart });
        }
        this.speechEndMs = this.positionMs;
      } else if (this.speaking && this.positionMs - this.speechEndMs >= this.silenceDurationMs) {
        this.speaking = false;
        events.push({ type: 'turn_ended', startMs: this.startMs, speechEndMs: this.speechEndMs, turnEndMs: this.positionMs });
      }
    }
    // Copy: the remainder must not pin the caller's (possibly large) frame in memory.
    this.carry = Buffer.from(data.subarray(offset));
    return events;
  }

  /** Forgets a speech segment in progress (after a manual commit or clear); the clock keeps running. */
  resetSpeech(): void {
    this.speaking = false;
  }
}

/** Root mean square of one window of PCM16LE samples. */
export function windowRms(data: Buffer, offset: number): number {
  let sum = 0;
  const end = offset + WINDOW_BYTES;
  for (let i = offset; i < end; i += 2) {
    const s = data.readInt16LE(i);
    sum += s * s;
  }
  return Math.sqrt(sum / (WINDOW_BYTES / 2));
}
