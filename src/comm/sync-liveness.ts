// What a synchronous call (recvSync, barrierSync, ...) can learn about a dead
// peer without the event loop, which it does not run while it waits: the
// shm rail's dead-pid check (the rail's own timer and the wire-up service's
// report both need the loop), and, for thread ranks, a flag per thread that
// the thread host raises when the worker exits.

import { getEnvironmentData, setEnvironmentData } from 'node:worker_threads';
import type { Context } from '../proto/context.js';
import { inboxName, IN_PID } from '../rail/shm/wire.js';
import type { NativeAddon } from '../native/addon.js';

/** Where the thread host leaves its flags for its worker threads (environment data reaches every worker at start). */
const EXITS_KEY = 'railcomm:thread-exits';

/** Thread host: one word per thread rank it runs (rank - base), set to 1 once that worker exited. */
export function threadExitFlags(count: number): Int32Array {
  const flags = new Int32Array(new SharedArrayBuffer(4 * Math.max(1, count)));
  setEnvironmentData(EXITS_KEY, flags.buffer);
  return flags;
}

/** A thread rank: its host's flags (null in a process rank, or under a host that has none). */
function threadExits(): Int32Array | null {
  const v = getEnvironmentData(EXITS_KEY);
  return v instanceof SharedArrayBuffer ? new Int32Array(v) : null;
}

/** The shm rail's parts a pid check needs (public fields of ShmRail). */
interface ShmView {
  readonly native: NativeAddon;
  readonly prefix: string;
}

export class PeerWatch {
  private readonly ctx: Context;
  private readonly exits: Int32Array | null;
  private readonly shm: ShmView | null;
  /** Pids of process peers once known (0: not yet; -1: cannot be known). */
  private readonly pids: Int32Array;

  constructor(ctx: Context) {
    this.ctx = ctx;
    this.exits = ctx.launch.threads >= 2 ? threadExits() : null;
    const rail = ctx.rails.find((r) => r.component === 'shm');
    this.shm = rail === undefined ? null : rail as unknown as ShmView;
    this.pids = new Int32Array(ctx.launch.size);
  }

  /**
   * Why world rank w is dead, or null while it may be alive (or nobody can
   * tell from here). A thread of this process: its host's exit flag; a
   * process on this host: whether its pid still exists (one system call).
   */
  dead(w: number): string | null {
    const { threads, threadBase } = this.ctx.launch;
    if (w >= threadBase && w < threadBase + threads) {
      return this.exits !== null && Atomics.load(this.exits, w - threadBase) !== 0 ? 'its thread exited' : null;
    }
    const pid = this.pidOf(w);
    if (pid <= 0) return null;
    try {
      process.kill(pid, 0);
      return null;
    } catch (e) {
      // EPERM: it exists (another user's process would be odd, but alive).
      return (e as NodeJS.ErrnoException).code === 'ESRCH' ? `its process ${pid} is gone` : null;
    }
  }

  /** The peer's pid: from its lane once that learned it, else from its inbox (mapped once, not counted as a peer's mapping). */
  private pidOf(w: number): number {
    const known = this.pids[w]!;
    if (known !== 0) return known;
    const lanePid = (this.ctx.existingEndpoint(w)?.lane as { pid?: unknown } | null | undefined)?.pid;
    if (typeof lanePid === 'number' && lanePid > 0) return (this.pids[w] = lanePid);
    if (this.shm === null) return (this.pids[w] = -1);
    try {
      const words = new Int32Array(this.shm.native.shmOpen(inboxName(this.shm.prefix, w)));
      const pid = words[IN_PID]!;
      return (this.pids[w] = pid > 0 ? pid : 0);
    } catch {
      // Not there (yet, or removed once every peer mapped it): the lane learns it when the peer talks.
      return 0;
    }
  }
}
