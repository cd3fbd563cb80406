/**
 * What the relay sees of a call's incoming RTP, as RFC 3550 defines it: packets lost (by sequence
 * number) and the interarrival jitter (§6.4.1, in milliseconds here). Pure: the caller passes the
 * arrival time, so tests replay any timing.
 */
export class ReceiveStats {
  packetsReceived = 0;
  packetsLost = 0;
  /** Packets that arrived after a later one (dropped: the decoder runs in order) or twice. */
  packetsLate = 0;
  /** RFC 3550 interarrival jitter, in RTP ticks (48 kHz for Opus). */
  private jitterTicks = 0;
  private highestSeq: number | undefined;
  private lastTransit: number | undefined;

  constructor(private readonly clockRateHz = 48_000) {}

  /** Records one packet; false when it is late or a duplicate and must not be decoded. */
  record(sequenceNumber: number, rtpTimestamp: number, arrivalMs: number): boolean {
    const arrivalTicks = Math.round((arrivalMs * this.clockRateHz) / 1000);
    const transit = arrivalTicks - rtpTimestamp;
    if (this.highestSeq !== undefined) {
      const delta = (sequenceNumber - this.highestSeq + 0x10000) % 0x10000;
      // Ahead by less than half the sequence space: new; otherwise a late or repeated packet.
      if (delta === 0 || delta >= 0x8000) {
        this.packetsLate++;
        // A late packet was counted lost when its successor came; it arrived after all (RFC 3550 §6.4.1).
        if (delta !== 0 && this.packetsLost > 0) this.packetsLost--;
        return false;
      }
      this.packetsLost += delta - 1;
    }
    this.highestSeq = sequenceNumber;
    this.packetsReceived++;
    if (this.lastTransit !== undefined) {
      // Timestamps wrap at 2^32; the difference of two transits stays small.
      let d = Math.abs(transit - this.lastTransit);
      if (d > 0x80000000) d = 0x100000000 - d;
      this.jitterTicks += (d - this.jitterTicks) / 16;
    }
    this.lastTransit = transit;
    return true;
  }

  get jitterMs(): number {
    return (this.jitterTicks * 1000) / this.clockRateHz;
  }

  /** Lost over expected, 0..1. */
  get lossRatio(): number {
    const expected = this.packetsReceived + this.packetsLost;
    return expected === 0 ? 0 : this.packetsLost / expected;
  }
}
