// Counters per rail and per peer: plain numeric fields bumped on the hot path
// (no maps, no strings), read by `--stats`, `railcomm info` and tests.

export class TrafficCounters {
  // Counts that pass 2^31 in a long job start as doubles (-0 reads as 0): a
  // field that starts as a small integer and grows past it changes its
  // representation in mid-run, which deoptimizes every function that bumps it.
  msgsSent = -0;
  bytesSent = -0;
  msgsRecv = -0;
  bytesRecv = -0;
  /** Operations answered "no resource" and queued. */
  pending = 0;
  /** Frames or datagrams refused as malformed. */
  badFrames = 0;
  /** Connections refused (bad job key, wrong job, duplicate). */
  refused = 0;
  retransmits = 0;
  drops = 0;
  /**
   * Ring rails: sleeps ended by the rail's second look, which found a frame
   * or room before any ring reached the rail: the race of ring.ts PLAIN_SYNC,
   * or a ring still on its way (a thread's waitAsync resolves a task later).
   */
  lateWakes = 0;
  /** Sends refused for want of a connection to the peer, each tried again later or failed (ofi: FI_ENOENT). */
  noConnection = 0;

  snapshot(): Record<string, number> {
    return {
      // + 0: a count never bumped is -0 (above), reported as 0.
      msgsSent: this.msgsSent + 0, bytesSent: this.bytesSent + 0,
      msgsRecv: this.msgsRecv + 0, bytesRecv: this.bytesRecv + 0,
      pending: this.pending, badFrames: this.badFrames, refused: this.refused,
      retransmits: this.retransmits, drops: this.drops, lateWakes: this.lateWakes,
      noConnection: this.noConnection,
    };
  }
}

/**
 * A ring rail's counters: its traffic (messages and bytes each way) is the
 * sum of its endpoints', counted there alone, so each message on the hot
 * path bumps two counts, not four. Its other counts are its own. The rail
 * keeps every endpoint it made, failed ones too, so nothing drops out.
 */
export class SummedTrafficCounters extends TrafficCounters {
  private readonly parts: () => Iterable<{ readonly counters: TrafficCounters }>;

  constructor(parts: () => Iterable<{ readonly counters: TrafficCounters }>) {
    super();
    this.parts = parts;
  }

  override snapshot(): Record<string, number> {
    const s = super.snapshot();
    for (const p of this.parts()) {
      const c = p.counters;
      s['msgsSent']! += c.msgsSent; s['bytesSent']! += c.bytesSent;
      s['msgsRecv']! += c.msgsRecv; s['bytesRecv']! += c.bytesRecv;
    }
    return s;
  }
}
