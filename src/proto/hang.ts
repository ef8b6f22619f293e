// The hang report: when requests are outstanding and none has completed for
// RAILCOMM_HANG_TIMEOUT ms, print what this rank waits for (posted receives,
// unexpected messages, rendezvous in flight, queued sends per peer), so that a
// stuck job says why instead of hanging silently.

import type { Logger } from '../core/log.js';

export interface HangSource {
  /** Requests not yet settled. */
  outstanding(): number;
  /** Increases each time a request settles. */
  settledCount(): number;
  /** Lines describing what is pending. */
  describePending(): string[];
}

export class HangWatch {
  private readonly timer: NodeJS.Timeout;
  private lastSettled = -1;
  private stuckSince = 0;
  private reported = false;

  constructor(src: HangSource, timeoutMs: number, log: Logger, rank: number) {
    const period = Math.max(50, Math.floor(timeoutMs / 4));
    this.timer = setInterval(() => {
      const now = Date.now();
      const settled = src.settledCount();
      if (src.outstanding() === 0 || settled !== this.lastSettled) {
        this.lastSettled = settled;
        this.stuckSince = now;
        this.reported = false;
        return;
      }
      if (!this.reported && now - this.stuckSince >= timeoutMs) {
        this.reported = true;
        const lines = src.describePending();
        log.error(`rank ${rank}: no request completed for ${now - this.stuckSince} ms (RAILCOMM_HANG_TIMEOUT); waiting on:\n  ${lines.join('\n  ')}`);
      }
    }, period);
    this.timer.unref();
  }

  dispose(): void {
    clearInterval(this.timer);
  }
}
