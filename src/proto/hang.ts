// The hang report, rank side: when this rank has had operations outstanding
// and none has completed for RAILCOMM_HANG_TIMEOUT ms, say what it waits for
// (posted receives, probes, rendezvous, queued sends, one-sided operations),
// each wait with the world rank it depends on. Under `railcomm run` the report
// goes to the launcher, which prints one picture of who waits on whom once
// every rank is stuck (cli/hang-board.ts); elsewhere the rank prints it itself.

import type { Logger } from '../core/log.js';

/** One thing this rank waits for. */
export interface HangWait {
  /** World rank it depends on; 'any' for an ANY_SOURCE receive or probe; null when it names no peer. */
  peer: number | 'any' | null;
  /** What it is, in words (communicator ranks as the program sees them). */
  what: string;
}

/**
 * What a rank tells the launcher. 'waiting': operations outstanding and none
 * completed for forMs; 'idle': nothing outstanding and nothing completed for
 * forMs (the rank is in its own code); 'moving': an operation completed
 * again after one of those.
 */
export interface HangReport {
  rank: number;
  state: 'waiting' | 'idle' | 'moving';
  forMs: number;
  timeoutMs: number;
  waits: HangWait[];
}

export interface HangSource {
  /** Operations not yet settled (requests, one-sided operations, shared-memory collective waits). */
  outstanding(): number;
  /** Increases each time an operation completes. */
  settledCount(): number;
  /** What is pending (rare: only when a report is due). */
  waits(): HangWait[];
}

/**
 * How a wait on a peer whose every lane stopped answering heartbeats begins
 * (lanes.ts): the launcher's picture then calls a cycle through that pair a
 * possible cut, not a deadlock.
 */
export const SILENT_LANES = 'silent lanes';

/** Waits sent or printed per report; a rank with thousands of unexpected messages says how many more. */
export const MAX_REPORTED_WAITS = 64;

/** A rank's report as lines, for printing where no launcher gathers them. */
export function describeWaits(waits: readonly HangWait[]): string[] {
  return waits.length > 0 ? waits.map((w) => w.what) : ['nothing visible in the protocol layer (a request waits on the application)'];
}

/** At most MAX_REPORTED_WAITS waits, the last saying how many more there were. */
function capped(all: HangWait[]): HangWait[] {
  return all.length > MAX_REPORTED_WAITS
    ? [...all.slice(0, MAX_REPORTED_WAITS - 1), { peer: null, what: `... and ${all.length - MAX_REPORTED_WAITS + 1} more` }]
    : all;
}

/** How long a report asked for watches whether anything still completes (ms). */
export const ASKED_LOOK_MS = 500;

/**
 * The launcher asked for this rank's report now (it stops the job at
 * --timeout), with RAILCOMM_HANG_TIMEOUT's watch or without it: 'moving' if
 * an operation completes within ASKED_LOOK_MS, else what it waits for, with
 * forMs the time it watched.
 */
export function reportWhenAsked(src: HangSource, rank: number, timeoutMs: number, sink: (r: HangReport) => void): void {
  const before = src.settledCount();
  setTimeout(() => {
    if (src.settledCount() !== before) { sink({ rank, state: 'moving', forMs: 0, timeoutMs, waits: [] }); return; }
    const busy = src.outstanding() > 0;
    sink({ rank, state: busy ? 'waiting' : 'idle', forMs: ASKED_LOOK_MS, timeoutMs, waits: busy ? capped(src.waits()) : [] });
  }, ASKED_LOOK_MS).unref();
}

export class HangWatch {
  private readonly timer: NodeJS.Timeout;
  private lastSettled = -1;
  private lastBusy = false;
  private since = Date.now();
  /** What was last reported in this quiet spell; 'moving' when nothing was. */
  private reported: HangReport['state'] = 'moving';

  /**
   * sink: where reports go (the launcher's service); null prints 'waiting'
   * reports here and drops the others.
   */
  constructor(
    private readonly src: HangSource,
    private readonly timeoutMs: number,
    private readonly log: Logger,
    private readonly rank: number,
    private readonly sink: ((r: HangReport) => void) | null,
  ) {
    const period = Math.max(50, Math.floor(timeoutMs / 4));
    this.timer = setInterval(() => this.tick(Date.now()), period);
    this.timer.unref();
  }

  /** One look (the timer's; tests call it with their own clock). */
  tick(now: number): void {
    const settled = this.src.settledCount();
    const busy = this.src.outstanding() > 0;
    if (settled !== this.lastSettled || busy !== this.lastBusy) {
      // Progress, or a wait that started (or ended) since the last look: a new quiet spell.
      this.lastSettled = settled;
      this.lastBusy = busy;
      this.since = now;
      if (this.reported !== 'moving') this.send('moving', 0, []);
      return;
    }
    const quiet = now - this.since;
    const state = busy ? 'waiting' : 'idle';
    if (quiet < this.timeoutMs || this.reported === state) return;
    this.send(state, quiet, busy ? capped(this.src.waits()) : []);
  }

  private send(state: HangReport['state'], forMs: number, waits: HangWait[]): void {
    this.reported = state;
    if (this.sink !== null) {
      this.sink({ rank: this.rank, state, forMs, timeoutMs: this.timeoutMs, waits });
      return;
    }
    if (state !== 'waiting') return;
    this.log.warn(`rank ${this.rank}: no request completed for ${forMs} ms (RAILCOMM_HANG_TIMEOUT=${this.timeoutMs}; the job goes on); waiting on:\n  ${describeWaits(waits).join('\n  ')}`);
  }

  dispose(): void {
    clearInterval(this.timer);
  }
}
