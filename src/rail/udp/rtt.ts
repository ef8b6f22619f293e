// Retransmission timeout from measured round trips, in the style of RFC 6298
// (smoothed RTT and variance, Karn's rule at the caller), with a floor of a few
// milliseconds instead of its one second, and exponential back-off on timeouts.

export class RttEstimator {
  srtt = 0;
  rttvar = 0;
  rto: number;
  private readonly floorMs: number;
  private readonly maxMs: number;
  private sampled = false;

  constructor(initialMs: number, floorMs = 5, maxMs = 2000) {
    this.floorMs = floorMs;
    this.maxMs = Math.max(maxMs, initialMs);
    this.rto = initialMs;
  }

  /** A round trip of a segment that was sent once (never a retransmitted one). */
  sample(ms: number): void {
    if (ms < 0) return;
    if (!this.sampled) {
      this.srtt = ms;
      this.rttvar = ms / 2;
      this.sampled = true;
    } else {
      this.rttvar = 0.75 * this.rttvar + 0.25 * Math.abs(this.srtt - ms);
      this.srtt = 0.875 * this.srtt + 0.125 * ms;
    }
    this.rto = Math.min(this.maxMs, Math.max(this.floorMs, this.srtt + 4 * this.rttvar));
  }

  /** A timeout fired: wait twice as long next time. */
  backoff(): void {
    this.rto = Math.min(this.maxMs, this.rto * 2);
  }
}
