// Decides whether a communicator can use the shared-memory collective path and
// gives that path its segment and its doorbell: worker threads of one process
// share a SharedArrayBuffer and sleep with Atomics.waitAsync; processes of one
// host (the shm rail runs) map a /dev/shm segment and sleep on a futex through
// the native addon (Atomics.wait does not reach across processes).

import { RailcommError, ErrorCode } from '../../core/errors.js';
import { sharedThreads } from '../../proto/rma/thread-share.js';
import { loadNative, shmJobPrefix, type DoorbellWaiter, type NativeAddon } from '../../native/addon.js';
import type { Context } from '../../proto/context.js';
import type { AsideWork } from '../../proto/progress.js';
import type { Communicator } from '../communicator.js';
import { barrierDissemination, type CollComm } from './engine.js';
import { cleanupOnSignal } from '../../core/signal-cleanup.js';
import { SharedCollectives, peerFailedError, type SharedHost } from './shared.js';
import { PeerWatch } from '../sync-liveness.js';

export function sharedPathFor(comm: Communicator, group: readonly number[], collCtx: number): SharedCollectives | null {
  const ctx = comm.world.ctx;
  const { threads, threadBase, size, localSize } = ctx.launch;
  // Another job's ranks (a merged communicator) map no segment of this job.
  if (group.length < 2 || ctx.params.collSharedMax <= 0 || group.some((w) => w >= size)) return null;
  const me = group.indexOf(ctx.worldRank);
  const native = ctx.rails.some((r) => r.component === 'shm') ? loadNative() : null;
  // Every rank of the job on this host, and the shm rail open: any communicator maps one segment.
  if (native !== null && localSize >= size) return new SharedCollectives(new HostSegment(ctx, native, group, `${shmJobPrefix(ctx.launch.jobId, ctx.launch.jobKey)}c${collCtx}-${group[0]}`), me, group.length);
  if (threads >= 2 && group.every((w) => w >= threadBase && w < threadBase + threads)) {
    return new SharedCollectives(new ThreadSegment(ctx, group, `coll/${collCtx}/${group[0]}`), me, group.length);
  }
  return null;
}

abstract class SegmentHost implements SharedHost {
  readonly spinMs: number;
  readonly slotBytes: number;
  readonly splitBytes: number;
  protected readonly ctx: Context;
  protected readonly group: readonly number[];
  protected readonly key: string;

  constructor(ctx: Context, group: readonly number[], key: string) {
    this.ctx = ctx;
    this.group = group;
    this.key = key;
    // Longer than the point-to-point spin: under load a wake-up from the doorbell
    // took about 1 ms here, so with a 1 ms budget the ranks took turns sleeping
    // (1.25 ms per 8-byte allreduce for whole runs); polling longer breaks that cycle.
    this.spinMs = ctx.oversubscribed ? 0 : ctx.params.collSpinUs / 1000;
    this.slotBytes = ctx.params.collSharedSlot & ~63;
    this.splitBytes = ctx.params.collSharedSplit;
    this.flatMax = ctx.params.collSharedFlat;
  }

  readonly flatMax: number;

  /**
   * A sleep that also ends when a member fails: the wait then looks at its
   * peers at once (within milliseconds of the wire-up service's word)
   * instead of at the end of its CHECK_MS sleep.
   */
  protected sleepUnlessFailed(start: (wake: () => void) => () => void): Promise<void> {
    return new Promise<void>((resolve) => {
      let stop: (() => void) | null = null;
      let unwatch: (() => void) | null = null;
      const wake = (): void => {
        if (unwatch === null) return;
        unwatch();
        unwatch = null;
        stop?.();
        resolve();
      };
      unwatch = this.ctx.watchFailures((w) => { if (this.group.includes(w)) wake(); });
      stop = start(wake);
    });
  }

  abstract attach(c: CollComm, bytes: number): Promise<Uint8Array>;
  abstract attachSync(barrier: () => void, rank: number, bytes: number): Uint8Array;
  abstract sleep(ctrl: Int32Array, seen: number, ms: number): Promise<unknown>;
  abstract pause(ctrl: Int32Array, seen: number, us: number): void;
  abstract wake(ctrl: Int32Array): void;

  atFinalize(fn: () => void): void {
    this.ctx.atFinalize(fn);
  }

  keep(on: boolean): void {
    this.ctx.progress.keep(on);
  }

  checkAlive(): void {
    for (const w of this.group) {
      const f = this.ctx.existingEndpoint(w)?.failure;
      if (f) throw peerFailedError(w, f);
    }
  }

  /** checkAlive() plus what only the event loop would tell it otherwise: a member's pid gone, a thread's exit. */
  checkAliveSync(): void {
    this.checkAlive();
    const watch = (this.watch ??= new PeerWatch(this.ctx));
    for (const w of this.group) {
      if (w === this.ctx.worldRank) continue;
      const why = watch.dead(w);
      if (why === null) continue;
      // What it sent before it died is still delivered (its BYE, if it finalized, says so).
      for (let i = 0; i < 64 && this.ctx.progress.pollSync(); i++) { /* drain */ }
      this.ctx.peerLost(w, why);
      this.checkAlive();
    }
  }
  private watch: PeerWatch | null = null;

  hangSync(forMs: number, missing: readonly number[]): boolean {
    const t = this.ctx.params.hangTimeout;
    if (t <= 0) return true;
    if (forMs < t) return false;
    const who = missing.map((r) => `rank ${r} (world rank ${this.group[r]})`).join(', ');
    this.ctx.log.warn(`rank ${this.ctx.worldRank}: a synchronous collective has waited ${Math.round(forMs)} ms (RAILCOMM_HANG_TIMEOUT=${t}; the job goes on) for ${missing.length === 1 && missing[0] === 0 && this.group.length > 1 ? 'rank 0 to release the phase (rank 0 waits for the others)' : who}; a rank in a synchronous call runs no timers or I/O until it returns`);
    return true;
  }

  pollSync(): void {
    this.ctx.progress.pollSync();
    this.ctx.progress.stepAsides();
  }

  addAside(w: AsideWork): void {
    this.ctx.progress.addAside(w);
  }

  protected missing(): RailcommError {
    return new RailcommError(ErrorCode.NO_RAIL, `shared-memory collectives: rank ${this.group[0]}'s segment did not arrive within ${this.ctx.params.connectTimeout} ms (RAILCOMM_CONNECT_TIMEOUT)`);
  }
}

/** Thread ranks of one process: rank 0 hands a SharedArrayBuffer to the others. */
class ThreadSegment extends SegmentHost {
  async attach(c: CollComm, bytes: number): Promise<Uint8Array> {
    const share = sharedThreads(this.ctx.rma, this.ctx.launch.jobId, (f) => this.ctx.atClose(f));
    // Every member's channel exists once all passed this barrier: the offer reaches them all.
    await barrierDissemination(c);
    if (c.rank === 0) {
      const seg = alignedShared(bytes);
      share.offer(this.key, seg);
      return seg;
    }
    const seg = await share.take(this.key, this.ctx.params.connectTimeout);
    if (seg === null || seg.byteLength !== bytes) throw this.missing();
    return seg;
  }

  attachSync(barrier: () => void, rank: number, bytes: number): Uint8Array {
    const share = sharedThreads(this.ctx.rma, this.ctx.launch.jobId, (f) => this.ctx.atClose(f));
    barrier();
    if (rank === 0) {
      const seg = alignedShared(bytes);
      share.offer(this.key, seg);
      return seg;
    }
    const seg = share.takeSync(this.key, this.ctx.params.connectTimeout);
    if (seg === null || seg.byteLength !== bytes) throw this.missing();
    return seg;
  }

  sleep(ctrl: Int32Array, seen: number, ms: number): Promise<unknown> {
    const w = Atomics.waitAsync(ctrl, 0, seen, ms);
    if (!w.async) return Promise.resolve();
    // (A wait ended by a failure leaves its waitAsync to time out on its own: at most ms.)
    return this.sleepUnlessFailed((wake) => { void w.value.then(wake); return () => undefined; });
  }

  pause(ctrl: Int32Array, seen: number, us: number): void {
    Atomics.wait(ctrl, 0, seen, us / 1000);
  }

  wake(ctrl: Int32Array): void {
    // Reaches Atomics.wait (pause) and Atomics.waitAsync (sleep) alike.
    Atomics.notify(ctrl, 0);
  }
}

/** Processes of one host: rank 0 creates a named segment, the others map it, then the name goes. */
class HostSegment extends SegmentHost {
  private readonly native: NativeAddon;
  private waiter: DoorbellWaiter | null = null;
  private woken: (() => void) | null = null;

  constructor(ctx: Context, native: NativeAddon, group: readonly number[], key: string) {
    super(ctx, group, key);
    this.native = native;
  }

  async attach(c: CollComm, bytes: number): Promise<Uint8Array> {
    let seg: Uint8Array | null = null;
    // Until every member mapped it, nothing may leave the name behind (holdName).
    const release = c.rank === 0 ? this.holdName() : null;
    try {
      if (c.rank === 0) seg = new Uint8Array(this.native.shmCreate(this.key, bytes));
      await barrierDissemination(c);
      if (c.rank !== 0) seg = this.open(bytes);
      // Everyone mapped it: remove the name so nothing outlives the job.
      await barrierDissemination(c);
      if (c.rank === 0) this.native.shmUnlink(this.key);
    } catch (e) {
      if (release !== null) this.unlinkName();
      throw e;
    } finally {
      release?.();
    }
    return this.mapped(seg!, bytes);
  }

  /**
   * Rank 0 named the segment: until every member mapped it, the name is
   * removed on a signal or at exit too (under mpirun no launcher sweeps
   * /dev/shm). Returns the function that ends that watch.
   */
  private holdName(): () => void {
    const unlink = (): void => this.unlinkName();
    const offSignal = cleanupOnSignal(unlink);
    process.on('exit', unlink);
    return () => { offSignal(); process.off('exit', unlink); };
  }

  /** Remove the segment's name (a member failed before all mapped it, or this rank ends); gone already is fine. */
  private unlinkName(): void {
    try { this.native.shmUnlink(this.key); } catch { /* never created, or removed */ }
  }

  attachSync(barrier: () => void, rank: number, bytes: number): Uint8Array {
    let seg: Uint8Array | null = null;
    const release = rank === 0 ? this.holdName() : null;
    try {
      if (rank === 0) seg = new Uint8Array(this.native.shmCreate(this.key, bytes));
      barrier();
      if (rank !== 0) seg = this.open(bytes);
      barrier();
      if (rank === 0) this.native.shmUnlink(this.key);
    } catch (e) {
      if (release !== null) this.unlinkName();
      throw e;
    } finally {
      release?.();
    }
    return this.mapped(seg!, bytes);
  }

  private open(bytes: number): Uint8Array {
    const seg = new Uint8Array(this.native.shmOpen(this.key));
    if (seg.byteLength < bytes) throw this.missing();
    return seg;
  }

  /** The segment everyone mapped: its doorbell thread. */
  private mapped(seg: Uint8Array, bytes: number): Uint8Array {
    const waiter = this.native.doorbellWaiter(seg.buffer as SharedArrayBuffer, seg.byteOffset, () => {
      const w = this.woken;
      this.woken = null;
      if (w !== null) w();
    });
    this.waiter = waiter;
    // The waiter is a native thread holding the mapping: it ends with the job's context.
    this.ctx.atClose(() => this.native.doorbellClose(waiter));
    return seg.subarray(0, bytes);
  }

  sleep(_ctrl: Int32Array, seen: number, ms: number): Promise<unknown> {
    return this.sleepUnlessFailed((wake) => {
      const t = setTimeout(() => { this.woken = null; wake(); }, ms);
      this.woken = () => { clearTimeout(t); wake(); };
      this.native.doorbellArm(this.waiter!, seen);
      // Woken by a failure: the doorbell stays armed, and its ring finds no one to resolve.
      return () => { clearTimeout(t); this.woken = null; };
    });
  }

  pause(ctrl: Int32Array, seen: number, us: number): void {
    this.native.futexWait(ctrl.buffer as SharedArrayBuffer, ctrl.byteOffset, seen, us);
  }

  wake(ctrl: Int32Array): void {
    this.native.futexWake(ctrl.buffer as SharedArrayBuffer, ctrl.byteOffset);
  }
}

/**
 * A SharedArrayBuffer's bytes starting on a cache line. V8 places large ones
 * 16 bytes past a page boundary (malloc's header): the control area's lines,
 * laid out 64 bytes apart, then each straddled two cache lines, one shared
 * with the neighbouring rank's boxes, and every arrival disturbed a
 * neighbour's line (thread ranks only: a /dev/shm mapping starts on a page).
 */
function alignedShared(bytes: number): Uint8Array {
  const sab = new SharedArrayBuffer(bytes + 64);
  const native = loadNative();
  const off = native === null ? 0 : Number((64n - (native.addressOf(sab) & 63n)) & 63n);
  return new Uint8Array(sab, off, bytes);
}
