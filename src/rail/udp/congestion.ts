// The congestion rules of a udp session's send side (session.ts, which keeps
// the window itself in Session.cwnd): loss episodes that halve the window,
// acknowledgements that regrow it, and why the send pump stalled (--stats).

import { SEG_OVERHEAD } from './segment.js';
import { seqDiff, seqLt } from '../../core/seq.js';
import type { Session } from './session.js';

/** One session's loss episodes and slow-start threshold. */
export class Congestion {
  private ssthresh = 1 << 30;
  /** Loss episode: losses before recoverEnd (txNext when it began) belong to it. */
  private inEpisode = false;
  private recoverEnd = 0;
  private episodeLosses = 0;

  /**
   * Segment `seq` of s was lost. The first loss opens an episode that lasts
   * until everything in flight then is acknowledged; a second loss inside it
   * halves the congestion window, once per episode.
   */
  lost(s: Session, seq: number): void {
    if (!this.inEpisode || !seqLt(seq, this.recoverEnd)) {
      this.inEpisode = true;
      this.recoverEnd = s.txNext;
      this.episodeLosses = 1;
      return;
    }
    if (++this.episodeLosses !== 2) return;
    const floor = 4 * (s.host.limits.dataMax + SEG_OVERHEAD);
    this.ssthresh = Math.max(floor, Math.min(s.flight, s.credit) / 2);
    s.cwnd = this.ssthresh;
    s.host.counters.windowCuts++;
  }

  /** `w` weighted bytes of s were acknowledged: grow the window (fast below ssthresh, then by about a segment per window). */
  grow(s: Session, w: number): void {
    if (s.cwnd >= 1 << 30) return;
    if (s.cwnd < this.ssthresh) s.cwnd += w;
    else s.cwnd += Math.max(1, (w * (s.host.limits.dataMax + SEG_OVERHEAD)) / s.cwnd);
    if (s.cwnd > 4 * s.credit) s.cwnd = 1 << 30; // no loss for long: back to credits alone
  }
}

/** Count why s's pump stopped with segments left to post (--stats): the window, the peer's credit, or the congestion window. */
export function countStall(s: Session, weight: number): false {
  const c = s.host.counters;
  if (seqDiff(s.txNext, s.txBase) >= s.host.limits.window) c.stallsWindow++;
  else if (s.flight + weight > s.credit) c.stallsCredit++;
  else c.stallsCwnd++;
  return false;
}
