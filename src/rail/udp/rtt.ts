// Retransmission timeout from measured round trips, in the style of RFC 6298
// (smoothed RTT and variance, Karn's rule at the caller), with a floor of a few
// milliseconds instead of its one second, and exponential back-off on timeouts
// that lasts only until the peer acknowledges something new.

export class RttEstimator {
  srtt = 0;
  rttvar = 0;
  /** The timeout from the samples alone. */
  base: number;
  /** Timeouts in a row since the last new acknowledgement. */
  backoffs = 0;
  rto: number;
  private readonly floorMs: number;
  private readonly maxMs: number;
  private sampled = false;

  constructor(initialMs: number, floorMs = 5, maxMs = 2000) {
    this.floorMs = floorMs;
    this.maxMs = Math.max(maxMs, initialMs);
    this.base = initialMs;
    this.rto = initialMs;
  }

  /** A round trip of a segment that was sent once (never a retransmitted one). */
  sample(ms: number): void {
    if (ms < 0) return;
    // Outliers (a segment that waited out a descheduled peer, or a stale
    // cumulative ACK) would set the timeout for everything after them; one
    // that fires early costs a single spurious segment, so ignore them.
    if (this.sampled && ms > 4 * this.srtt + 50) return; // an outlier (a descheduled peer): ignored
    if (!this.sampled) {
      this.srtt = ms;
      this.rttvar = ms / 2;
      this.sampled = true;
    } else {
      this.rttvar = 0.75 * this.rttvar + 0.25 * Math.abs(this.srtt - ms);
      this.srtt = 0.875 * this.srtt + 0.125 * ms;
    }
    // The variance term is capped at about one more smoothed round trip: on a
    // shared machine a descheduled peer makes rare huge samples, and a timeout
    // that fires early costs one spurious segment (only the oldest is resent),
    // while one that fires late stalls the whole stream.
    this.base = Math.min(this.maxMs, Math.max(this.floorMs, Math.min(this.srtt + 4 * this.rttvar, 2 * this.srtt + this.floorMs)));
    this.update();
  }

  /** A timeout fired: wait twice as long next time. */
  backoff(): void {
    if (this.rto < this.maxMs) this.backoffs++;
    this.update();
  }

  /** The peer acknowledged new data: it is alive and the path works again. */
  progress(): void {
    if (this.backoffs === 0) return;
    this.backoffs = 0;
    this.update();
  }

  private update(): void {
    this.rto = Math.min(this.maxMs, this.base * 2 ** this.backoffs);
  }
}
