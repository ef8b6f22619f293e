// The phases of the shared-memory collectives: each rank's flag on a cache
// line of its own in the segment's control area, raised to the phase number
// on arrival, and the wait until every rank has arrived. Up to
// RAILCOMM_COLL_SHARED_FLAT ranks every rank watches every flag (one hop);
// beyond, rank 0 alone watches them and then raises a release word that the
// others watch (two hops, but each rank polls one line instead of p: at 16
// ranks every rank rescanning every line kept the lines moving between all
// cores). Either way a wait scans the flags from the first rank not yet seen,
// not from rank 0 again. The wait polls while the ranks have cores of their
// own, blocks on the doorbell word when they outnumber the cores, then
// sleeps on the doorbell without blocking the event loop (a futex for
// processes, Atomics.waitAsync for thread ranks); a synchronous call
// (barrierSync, ...) blocks at the call instead, checking its peers itself.

import { RailcommError, ErrorCode } from '../../core/errors.js';
import type { SharedHost } from './shared-host-api.js';
import type { PendingSteps } from './pending-steps.js';

/** Bytes of a control line: the doorbell line, one line per rank (flag word first), then the release line. */
export const LINE = 64;
const LINE_I32 = LINE / 4;

/** In a rank's line, after its flag: 1 once that rank called finalize() (it arrives no more). */
const LEFT = 1;

/** Int32 index of the doorbell word sleepers wait on, and of the count of sleepers. */
const BELL = 0;
const SLEEPERS = 1;
/** How long one spin burst runs before the event loop gets a turn (ms). */
const BURST_MS = 0.05;
/** One blocking wait of a rank that must not spin (us): the event loop gets a turn at least this often. */
const PAUSE_US = 500;
/** How long (ms) such a rank waits that way before it sleeps on the doorbell without blocking the loop. */
const PAUSE_MS = 5;
/** How long a sleeper waits before checking that its peers are alive (ms); a synchronous wait checks as often. */
const CHECK_MS = 100;

/** Polls of a synchronous wait between two readings of the clock (a power of two). */
const SYNC_LOOK = 4096;

/** What a wait waits for: every rank's flag, or the leader's release word. */
const ALL = 0;
const REL = 1;
/** No async wait is pending. */
const NONE = -1;

const RESOLVED = Promise.resolve();

/** Control area bytes for `size` ranks: the doorbell line, a line per rank, the release line. */
export function controlBytes(size: number): number {
  return LINE * (size + 2);
}

export class Phases {
  private readonly host: SharedHost;
  private readonly ctrl: Int32Array;
  private readonly rank: number;
  private readonly size: number;
  private readonly broken: (e: RailcommError) => void;
  /** Every rank watches every flag (one hop), or rank 0 gathers and releases (two). */
  readonly flat: boolean;
  /** Int32 index of the release word (the release line's first word). */
  private readonly rel: number;
  private seq = 0;
  /** A synchronous call runs: waits block at the call and never return a promise. */
  sync = false;
  /** The phase the scan below belongs to, and the ranks [0, scanned) seen arrived at it. */
  private scanSeq = 0;
  private scanned = 0;
  /** The phase an async wait (waitAll) waits for, and what for (NONE: none): finishWait() ends it at the call. */
  private pendingS = 0;
  private pendingWhat = NONE;
  /** This rank finalized with a collective still waiting (stop()): its wait fails with this. */
  private stopped: RailcommError | null = null;
  private readonly steps: PendingSteps;

  /** ctrl: the control area (controlBytes(size)); broken: told when a member died mid-phase; steps: where a wait's rest goes. */
  constructor(host: SharedHost, ctrl: Int32Array, rank: number, size: number, broken: (e: RailcommError) => void, flat: boolean, steps: PendingSteps) {
    this.host = host;
    this.ctrl = ctrl;
    this.rank = rank;
    this.size = size;
    this.broken = broken;
    this.flat = flat;
    this.rel = (size + 1) * LINE_I32;
    this.steps = steps;
  }

  /** Raise this rank's flag to the next phase; returns the phase number. */
  arrive(): number {
    const s = (this.seq = (this.seq + 1) | 0);
    const ctrl = this.ctrl;
    Atomics.store(ctrl, (this.rank + 1) * LINE_I32, s);
    this.ringIfSleepers();
    return s;
  }

  /**
   * A sleeper counts itself, then reads the bell, then checks the flags (all
   * sequentially consistent): if this load misses it, its check sees our
   * store; if not, the bell moves after it was read and the wake follows.
   * Nobody sleeping (the common case) costs no read-modify-write.
   */
  private ringIfSleepers(): void {
    const ctrl = this.ctrl;
    if (Atomics.load(ctrl, SLEEPERS) > 0) {
      Atomics.add(ctrl, BELL, 1);
      this.host.wake(ctrl);
    }
  }

  /** Every rank has arrived at phase s (the scan resumes where the last look stopped). */
  private allArrived(s: number): boolean {
    if (s !== this.scanSeq) { this.scanSeq = s; this.scanned = 0; }
    const ctrl = this.ctrl;
    for (let r = this.scanned; r < this.size; r++) {
      if (((Atomics.load(ctrl, (r + 1) * LINE_I32) - s) | 0) < 0) { this.scanned = r; return false; }
    }
    this.scanned = this.size;
    return true;
  }

  private reached(s: number, what: number): boolean {
    return what === ALL ? this.allArrived(s) : ((Atomics.load(this.ctrl, this.rel) - s) | 0) >= 0;
  }

  /** The leader: everyone has arrived at s (and what it wrote before is visible): let them go. */
  release(s: number): void {
    Atomics.store(this.ctrl, this.rel, s);
    this.ringIfSleepers();
  }

  /**
   * Arrive at the next phase and wait until every rank has: spin a while
   * (the first burst without leaving this call), then in bursts that let the
   * event loop run, then sleep on the doorbell. Null when nothing had to be
   * awaited (always, in a synchronous call).
   */
  next(): Promise<void> | null {
    const s = this.arrive();
    if (this.flat) return this.await(s, ALL);
    if (this.rank !== 0) return this.await(s, REL);
    const w = this.await(s, ALL);
    if (w !== null) return this.releaseAfter(w, s);
    this.release(s);
    return null;
  }

  private releaseAfter(w: Promise<void>, s: number): Promise<void> {
    return this.steps.after(w, () => { this.release(s); return null; });
  }

  /** Leader mode, rank 0: wait until every rank arrived at s (the caller works on their data, then calls release). */
  gather(s: number): Promise<void> | null {
    return this.await(s, ALL);
  }

  /** Leader mode, other ranks: wait for rank 0's release of phase s. */
  released(s: number): Promise<void> | null {
    return this.await(s, REL);
  }

  private await(s: number, what: number): Promise<void> | null {
    if (this.sync) { this.waitSync(s, what); return null; }
    if (this.spinFor(s, what, BURST_MS)) return null;
    return this.waitAll(s, what);
  }

  private spinFor(s: number, what: number, ms: number): boolean {
    if (this.reached(s, what)) return true;
    if (this.host.spinMs <= 0) return false;
    // The clock first at poll 64 (a reading allocates on Node 20; most phases end before).
    let until = -1;
    for (let i = 1; ; i++) {
      if (this.reached(s, what)) return true;
      if ((i & 63) !== 0) continue;
      const now = performance.now();
      if (until < 0) until = now + ms;
      else if (now > until) return false;
    }
  }

  /**
   * Wait for phase s, letting the event loop run between bursts. Ranks
   * with a core each spin for the spin budget; ranks that outnumber the cores
   * block on the doorbell word in short waits for a few milliseconds (a
   * peer's arrival wakes the thread itself). Then sleep on the doorbell
   * without blocking the loop. Ranks with a core do not block: measured under
   * load, a 200 us blocking wait gave the core to another process and got it
   * back only 15 ms later.
   */
  private async waitAll(s: number, what: number): Promise<void> {
    if (this.reached(s, what)) return;
    this.pendingS = s;
    this.pendingWhat = what;
    const spin = this.host.spinMs > 0;
    const ctrl = this.ctrl;
    try {
      // A blocking wait never runs inside the call: a nonblocking collective
      // (iallreduce, ibarrier) hands its Request back first.
      if (!spin) await RESOLVED;
      const until = performance.now() + (spin ? this.host.spinMs : PAUSE_MS);
      for (;;) {
        if (spin ? this.spinFor(s, what, BURST_MS) : this.pauseFor(s, what)) return;
        if (this.stopped !== null) throw this.stopped;
        if (performance.now() > until) break;
        await new Promise<void>((r) => setImmediate(r));
      }
      Atomics.add(ctrl, SLEEPERS, 1);
      try {
        for (;;) {
          const bell = Atomics.load(ctrl, BELL);
          if (this.reached(s, what)) return;
          await this.host.sleep(ctrl, bell, CHECK_MS);
          if (this.reached(s, what)) return;
          if (this.stopped !== null) throw this.stopped;
          this.checkPeers(s, false);
        }
      } finally {
        Atomics.sub(ctrl, SLEEPERS, 1);
      }
    } finally {
      if (this.pendingS === s && this.pendingWhat === what) this.pendingWhat = NONE;
    }
  }

  /** The async wait pending, if any, is over (its phase reached): what awaited it may run. */
  waitOver(): boolean {
    return this.pendingWhat === NONE || this.reached(this.pendingS, this.pendingWhat);
  }

  /**
   * A synchronous call found an async wait pending (a collective it must
   * finish first, pending-steps.ts): wait for its phase here, blocking. The
   * async wait then ends by itself (flags only grow: its phase stays
   * reached); the bell wakes it if it sleeps, so that its collective settles
   * on the loop's next turn, not at the next check.
   */
  finishWait(): void {
    if (this.pendingWhat === NONE) return;
    this.waitSync(this.pendingS, this.pendingWhat);
    this.pendingWhat = NONE;
    Atomics.add(this.ctrl, BELL, 1);
    this.host.wake(this.ctrl);
  }

  /**
   * A synchronous call's wait: spin for the spin budget (ranks with a core
   * each), then block on the doorbell word in short waits; every CHECK_MS,
   * check the peers itself (nothing else runs: the shm rail's pid check and
   * the thread host's exit flags, through the host), drive the point-to-point
   * rails, and say so once when the wait outlasts RAILCOMM_HANG_TIMEOUT.
   */
  private waitSync(s: number, what: number): void {
    // The clock is read every SYNC_LOOK polls (a reading allocates on Node 20;
    // a phase mostly completes long before), and once blocking, every 64 pauses.
    // (When the wait began is taken at the first look: most phases end before it.)
    let t0 = -1, spinUntil = 0, nextCheck = 0;
    let said = false;
    let blocking = this.host.spinMs <= 0;
    if (blocking) { t0 = performance.now(); nextCheck = t0 + CHECK_MS; }
    for (let i = 1; ; i++) {
      if (this.reached(s, what)) return;
      if (!blocking) {
        if ((i & (SYNC_LOOK - 1)) !== 0) continue;
        this.host.pollSync();
        const now = performance.now();
        if (t0 < 0) { t0 = now; spinUntil = now + this.host.spinMs; nextCheck = now + CHECK_MS; continue; }
        if (now > spinUntil) blocking = true;
        if (now < nextCheck) continue;
        nextCheck = now + CHECK_MS;
        this.checkPeers(s, true);
        if (!said) said = this.host.hangSync(now - t0, what === ALL ? this.missing(s) : [0]);
        continue;
      }
      if (this.pauseFor(s, what)) return;
      this.host.pollSync();
      if ((i & 63) !== 0) continue;
      const now = performance.now();
      if (now < nextCheck) continue;
      nextCheck = now + CHECK_MS;
      this.checkPeers(s, true);
      if (!said) said = this.host.hangSync(now - t0, what === ALL ? this.missing(s) : [0]);
    }
  }

  /** Ranks of the communicator not arrived at phase s (for the hang report). */
  private missing(s: number): number[] {
    const out: number[] = [];
    for (let r = 0; r < this.size; r++) if (((Atomics.load(this.ctrl, (r + 1) * LINE_I32) - s) | 0) < 0) out.push(r);
    return out;
  }

  /** A member that will never arrive (finalized, dead): the communicator breaks, and this wait throws. */
  private checkPeers(s: number, sync: boolean): void {
    try {
      this.checkLeft(s);
      if (sync) this.host.checkAliveSync();
      else this.host.checkAlive();
    } catch (e) {
      this.broken(e as RailcommError);
      throw e;
    }
  }

  /**
   * This rank finalized while a collective of its own still waited here: the
   * wait fails with e (else, the loop having nothing else to do, a thread
   * rank ended with its promise never settled: exit code 13, no word).
   */
  stop(e: RailcommError): void {
    this.stopped = e;
    Atomics.add(this.ctrl, BELL, 1);
    this.host.wake(this.ctrl);
  }

  /** This rank finalized: a member still waiting for it in a collective fails instead of sleeping for ever. */
  leave(): void {
    const ctrl = this.ctrl;
    Atomics.store(ctrl, (this.rank + 1) * LINE_I32 + LEFT, 1);
    Atomics.add(ctrl, BELL, 1);
    this.host.wake(ctrl);
  }

  /** Throws ERR_PEER_FAILED if a member that has not reached phase s finalized. */
  private checkLeft(s: number): void {
    const ctrl = this.ctrl;
    for (let r = 0; r < this.size; r++) {
      const at = (r + 1) * LINE_I32;
      if (((Atomics.load(ctrl, at) - s) | 0) < 0 && Atomics.load(ctrl, at + LEFT) !== 0) {
        throw new RailcommError(ErrorCode.PEER_FAILED, `rank ${r} of this communicator called finalize() while a collective waited for it: every rank must call the same collectives before finalize()`);
      }
    }
  }

  /**
   * Block this thread on the doorbell word for at most PAUSE_US: for ranks
   * that outnumber the cores, which must not spin, a peer's arrival then
   * reaches the waiting thread itself instead of a doorbell thread that wakes
   * the event loop (two hand-offs, each a wait for a core). True when phase s is reached.
   */
  private pauseFor(s: number, what: number): boolean {
    const ctrl = this.ctrl;
    Atomics.add(ctrl, SLEEPERS, 1);
    const bell = Atomics.load(ctrl, BELL);
    if (!this.reached(s, what)) this.host.pause(ctrl, bell, PAUSE_US);
    Atomics.sub(ctrl, SLEEPERS, 1);
    return this.reached(s, what);
  }
}
