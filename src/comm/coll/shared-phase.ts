// The phases of the shared-memory collectives: each rank's flag on a cache
// line of its own in the segment's control area, raised to the phase number
// on arrival, and the wait until every flag has reached it: polling while the
// ranks have cores of their own, blocking on the doorbell word when they
// outnumber the cores, then sleeping on the doorbell without blocking the
// event loop (a futex for processes, Atomics.waitAsync for thread ranks).

import { RailcommError, ErrorCode } from '../../core/errors.js';
import type { SharedHost } from './shared.js';

/** Bytes of a control line: the doorbell line, then one line per rank (flag word first). */
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
/** How long a sleeper waits before checking that its peers are alive (ms). */
const CHECK_MS = 100;

const RESOLVED = Promise.resolve();

export class Phases {
  private readonly host: SharedHost;
  private readonly ctrl: Int32Array;
  private readonly rank: number;
  private readonly size: number;
  private readonly broken: (e: RailcommError) => void;
  private seq = 0;

  /** ctrl: the control area (LINE * (size + 1) bytes); broken: told when a member died mid-phase. */
  constructor(host: SharedHost, ctrl: Int32Array, rank: number, size: number, broken: (e: RailcommError) => void) {
    this.host = host;
    this.ctrl = ctrl;
    this.rank = rank;
    this.size = size;
    this.broken = broken;
  }

  private arrive(): number {
    const s = (this.seq = (this.seq + 1) | 0);
    const ctrl = this.ctrl;
    Atomics.store(ctrl, (this.rank + 1) * LINE_I32, s);
    // A sleeper counts itself, then reads the bell, then checks the flags
    // (all sequentially consistent): if this load misses it, its check sees
    // our flag; if not, the bell moves after it was read and the wake follows.
    // Nobody sleeping (the common case) costs no read-modify-write.
    if (Atomics.load(ctrl, SLEEPERS) > 0) {
      Atomics.add(ctrl, BELL, 1);
      this.host.wake(ctrl);
    }
    return s;
  }

  private allArrived(s: number): boolean {
    const ctrl = this.ctrl;
    for (let r = 0; r < this.size; r++) if (((Atomics.load(ctrl, (r + 1) * LINE_I32) - s) | 0) < 0) return false;
    return true;
  }

  /**
   * Arrive at the next phase and wait for every rank: spin a while (the
   * first burst without leaving this call), then in bursts that let the event
   * loop run, then sleep on the doorbell. Null when nothing had to be awaited.
   */
  next(): Promise<void> | null {
    const s = this.arrive();
    if (this.spinFor(s, BURST_MS)) return null;
    return this.waitAll(s);
  }

  private spinFor(s: number, ms: number): boolean {
    if (this.allArrived(s)) return true;
    if (this.host.spinMs <= 0) return false;
    const until = performance.now() + ms;
    for (let i = 1; ; i++) {
      if (this.allArrived(s)) return true;
      if ((i & 63) === 0 && performance.now() > until) return false;
    }
  }

  /**
   * Wait for every rank, letting the event loop run between bursts. Ranks
   * with a core each spin for the spin budget; ranks that outnumber the cores
   * block on the doorbell word in short waits for a few milliseconds (a
   * peer's arrival wakes the thread itself). Then sleep on the doorbell
   * without blocking the loop. Ranks with a core do not block: measured under
   * load, a 200 us blocking wait gave the core to another process and got it
   * back only 15 ms later.
   */
  private async waitAll(s: number): Promise<void> {
    if (this.allArrived(s)) return;
    const spin = this.host.spinMs > 0;
    // A blocking wait never runs inside the call: a nonblocking collective
    // (iallreduce, ibarrier) hands its Request back first.
    if (!spin) await RESOLVED;
    const until = performance.now() + (spin ? this.host.spinMs : PAUSE_MS);
    for (;;) {
      if (spin ? this.spinFor(s, BURST_MS) : this.pauseFor(s)) return;
      if (performance.now() > until) break;
      await new Promise<void>((r) => setImmediate(r));
    }
    const ctrl = this.ctrl;
    Atomics.add(ctrl, SLEEPERS, 1);
    try {
      for (;;) {
        const bell = Atomics.load(ctrl, BELL);
        if (this.allArrived(s)) return;
        await this.host.sleep(ctrl, bell, CHECK_MS);
        if (this.allArrived(s)) return;
        try {
          this.checkLeft(s);
          this.host.checkAlive();
        } catch (e) {
          this.broken(e as RailcommError);
          throw e;
        }
      }
    } finally {
      Atomics.sub(ctrl, SLEEPERS, 1);
    }
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
   * the event loop (two hand-offs, each a wait for a core). True when all arrived.
   */
  private pauseFor(s: number): boolean {
    const ctrl = this.ctrl;
    Atomics.add(ctrl, SLEEPERS, 1);
    const bell = Atomics.load(ctrl, BELL);
    if (!this.allArrived(s)) this.host.pause(ctrl, bell, PAUSE_US);
    Atomics.sub(ctrl, SLEEPERS, 1);
    return this.allArrived(s);
  }
}
