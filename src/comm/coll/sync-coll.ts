// The synchronous collectives (comm.barrierSync, bcastSync, allreduceSync,
// reduceSync, allgatherSync): through the shared segment with phases that
// block at the call (attached at the call the first time), otherwise the
// async algorithms written blocking (sync-p2p.ts). Each call takes the same
// collective tags as its async twin, and under RAILCOMM_CHECK agrees on the
// call the same way first (coll/checked.ts), so sync and async collectives
// keep one order on a communicator. The common calls through an idle,
// attached segment build no plan: nothing is allocated per call.

import type { CollectivePlanner, CollPlan } from '../collectives.js';
import { checkArray, checkRoot } from '../collectives.js';
import { asBytes } from '../../core/bytes.js';
import type { World } from '../world.js';
import { RailcommError, ErrorCode } from '../../core/errors.js';
import { checkOp, isCommutative, type ReduceArray, type ReduceOpName, type UserOp } from './ops.js';
import type { ScratchPool } from './engine.js';
import { SharedCollectives } from './shared.js';
import { SIG_WORDS, refusedSignature, verifySignatures } from './check.js';
import {
  allgatherBruckSync, allgatherRingSync, allreduceRecursiveDoublingSync, allreduceRingSync, barrierSync, bcastBinomialSync,
  reduceBinomialSync, reduceRankOrderSync, type SyncComm,
} from './sync-p2p.js';

/** What the synchronous collectives need from their communicator. */
export interface SyncCollHost {
  readonly rank: number;
  readonly size: number;
  readonly world: World;
  readonly planner: CollectivePlanner;
  readonly scratch: ScratchPool;
  readonly checking: boolean;
  /** size x SIG_WORDS doubles for RAILCOMM_CHECK's agreements through the segment. */
  readonly agreeBuffer: Float64Array;
  /** Take the next collective tag. */
  nextTag(): number;
  /** The number of the next checked call (RAILCOMM_CHECK's messages). */
  nextCheckedCall(): number;
  /** Blocking point-to-point on the collective context, on `tag`, for a call named `what`. */
  comm(tag: number, what: string): SyncComm;
  /** ERR_NO_RAIL unless every member is reached over a lane that progresses without the event loop. */
  needAll(what: string, asyncCall: string): void;
  /** Nonblocking collectives of the communicator over point-to-point started and not settled. */
  collsInFlight(): number;
}

type P2pAlgorithm = (c: SyncComm) => void;
const NOTHING: P2pAlgorithm = () => {};

export class SyncCollectives {
  private readonly h: SyncCollHost;
  private lanesOk = false;

  constructor(h: SyncCollHost) {
    this.h = h;
  }

  /** The segment, when this call may run on it at once without a plan (idle, attached, nothing to announce or check). */
  private fast(what: string, asyncCall: string): SharedCollectives | null {
    const h = this.h;
    h.world.check(what);
    if (!this.lanesOk) { h.needAll(what, asyncCall); this.lanesOk = true; }
    // One over point-to-point continues only on the event loop, which a synchronous call
    // does not run: the sync call would wait for ranks that wait for it. (Those through
    // the shared segment are finished at the call: SharedCollectives.beginSync.)
    if (h.collsInFlight() > 0) {
      throw new RailcommError(ErrorCode.INVALID_ARG, `${what}: a nonblocking collective of this communicator that runs over point-to-point (not shared memory) is still running, and it completes only on the event loop, which a synchronous call does not run; wait for its Request before calling ${what}`);
    }
    const pl = h.planner;
    const sh = pl.shared;
    return sh !== null && sh.idle && !pl.noFastPath ? sh : null;
  }

  barrier(): void {
    const what = 'barrierSync';
    const sh = this.fast(what, 'await comm.barrier()');
    if (sh !== null && this.h.size > 1) {
      this.enterFast(sh, what);
      try { SharedCollectives.syncLeak(sh.barrier()); } finally { sh.endSync(); }
      return;
    }
    this.run(what, this.h.planner.barrier(), barrierSync);
  }

  bcast(buf: ArrayBufferView, root: number): void {
    const what = 'bcastSync';
    const sh = this.fast(what, 'await comm.bcast()');
    if (sh !== null) {
      let bytes: Uint8Array, rt: number;
      try {
        bytes = asBytes(buf, 'bcast: buf');
        rt = checkRoot(root, this.h.size, 'bcast');
      } catch (e) { this.refuse('bcast', what, e); }
      if (this.h.planner.viaShared(bytes.length) !== null) {
        this.enterFast(sh, what);
        try { SharedCollectives.syncLeak(sh.bcast(bytes, rt)); } finally { sh.endSync(); }
        return;
      }
    }
    this.bcastByPlan(buf, root);
  }

  /** Apart from bcast(): its closure would cost a context on every call, fast path included. */
  private bcastByPlan(buf: ArrayBufferView, root: number): void {
    let plan: CollPlan;
    try { plan = this.h.planner.bcast(buf, root); } catch (e) { this.refuse('bcast', 'bcastSync', e); }
    const bytes = new Uint8Array(buf.buffer, buf.byteOffset, buf.byteLength);
    this.run('bcastSync', plan, (c) => bcastBinomialSync(c, bytes, root));
  }

  allreduce<T extends ReduceArray>(send: T, recv: T, op: ReduceOpName | UserOp<T>): void {
    const what = 'allreduceSync';
    const pl = this.h.planner;
    const sh = this.fast(what, 'await comm.allreduce()');
    if (sh !== null) {
      let o: ReturnType<CollectivePlanner['checkAllreduce']>;
      try { o = pl.checkAllreduce(send, recv, op, 'allreduce'); } catch (e) { this.refuse('allreduce', what, e); }
      if (pl.viaShared(send.length * send.BYTES_PER_ELEMENT) !== null) {
        this.enterFast(sh, what);
        try { SharedCollectives.syncLeak(sh.reduce(send, recv, o, -1)); } finally { sh.endSync(); }
        return;
      }
    }
    this.allreduceByPlan(send, recv, op);
  }

  /** Apart from allreduce(): its closures would cost a context on every call, fast path included (a minor GC every 70,000 calls). */
  private allreduceByPlan(send: ReduceArray, recv: ReduceArray, op: unknown): void {
    let plan: CollPlan, o: ReturnType<typeof checkOp>;
    try {
      plan = this.h.planner.allreduce(send, recv, op);
      o = checkOp(op, send, 'allreduce');
    } catch (e) { this.refuse('allreduce', 'allreduceSync', e); }
    const ring = send.byteLength >= this.h.world.ctx.params.collAllreduceRing && send.length >= this.h.size && this.h.size > 1 && isCommutative(o);
    this.run('allreduceSync', plan, ring ? (c) => allreduceRingSync(c, send, recv, o) : (c) => allreduceRecursiveDoublingSync(c, send, recv, o));
  }

  reduce<T extends ReduceArray>(send: T, recv: T | null, op: ReduceOpName | UserOp<T>, root: number): void {
    const what = 'reduceSync';
    this.fast(what, 'await comm.reduce()');
    let plan: CollPlan, o: ReturnType<typeof checkOp>;
    try {
      plan = this.h.planner.reduce(send, recv, op, root);
      o = checkOp(op, send, 'reduce');
    } catch (e) { this.refuse('reduce', what, e); }
    const out = this.h.rank === root ? recv : null;
    this.run(what, plan, isCommutative(o) ? (c) => reduceBinomialSync(c, send, out, o, root) : (c) => reduceRankOrderSync(c, send, out, o, root));
  }

  allgather(send: ArrayBufferView, recv: ArrayBufferView): void {
    const what = 'allgatherSync';
    this.fast(what, 'await comm.allgather()');
    let plan: CollPlan, s: ReturnType<typeof checkArray>;
    try {
      plan = this.h.planner.allgather(send, recv);
      s = checkArray(send, 'allgather send');
    } catch (e) { this.refuse('allgather', what, e); }
    const p = this.h.size;
    const ring = recv.byteLength >= this.h.world.ctx.params.collAllgatherRing;
    const counts = ring ? new Array<number>(p).fill(s.length) : null;
    this.run(what, plan, counts !== null ? (c) => allgatherRingSync(c, send, recv, counts) : (c) => allgatherBruckSync(c, send, recv));
  }

  /**
   * This rank refused its arguments (e, thrown here): as the async calls do
   * (Communicator.refuse), the call still takes its place in the sequence, so
   * the next collective matches on every rank; under RAILCOMM_CHECK it joins
   * the agreement with a "refused" signature, so the other ranks fail this
   * call (ERR_COLLECTIVE_MISMATCH) instead of waiting in it.
   */
  private refuse(name: string, what: string, e: unknown): never {
    if (e instanceof RailcommError) {
      if (!this.h.checking) this.h.nextTag();
      else {
        const plan: CollPlan = { name, algorithm: 'refused', run: () => Promise.reject(e), sig: refusedSignature(name, e.code) };
        // The others' verdict (a mismatch) is theirs to throw; this rank throws its own error.
        try { this.checked(what, plan, NOTHING); } catch { /* see above */ }
      }
    }
    throw e;
  }

  /** The fast path's entry: the tag, the hang report's count, phases that block. */
  private enterFast(sh: SharedCollectives, what: string): void {
    this.h.nextTag();
    this.h.world.ctx.progress.completedAtOnce();
    sh.beginSync(what, null);
  }

  /** A planned call: announced, checked first under RAILCOMM_CHECK, then the segment or point-to-point. */
  private run(what: string, plan: CollPlan, p2p: P2pAlgorithm): void {
    const h = this.h;
    h.planner.announce(plan);
    h.world.ctx.progress.completedAtOnce();
    if (h.checking) { this.checked(what, plan, p2p); return; }
    const tag = h.nextTag();
    if (plan.shared === true) { this.sharedStep(what, tag, plan.step!); return; }
    p2p(h.comm(tag, what));
  }

  /** A shared step at the call, attaching the segment first over point-to-point on `tag` if need be. */
  private sharedStep(what: string, tag: number, step: () => Promise<void> | null): void {
    const sh = this.h.planner.shared!;
    sh.beginSync(what, this.attacher(sh, tag, what));
    try { SharedCollectives.syncLeak(step()); } finally { sh.endSync(); }
  }

  private attacher(sh: SharedCollectives, tag: number, what: string): (() => void) | null {
    if (sh.attached) return null;
    const c = this.h.comm(tag, what);
    return () => barrierSync(c);
  }

  /** RAILCOMM_CHECK: agree on the call's signature, then run it, taking tags as coll/checked.ts does. */
  private checked(what: string, plan: CollPlan, p2p: P2pAlgorithm): void {
    const h = this.h;
    const sig = plan.sig!;
    const call = h.nextCheckedCall();
    const sh = h.planner.shared;
    if (sh === null) {
      const agree = h.nextTag(), run = h.nextTag();
      const all = new Float64Array(SIG_WORDS * h.size);
      allgatherBruckSync(h.comm(agree, what), Float64Array.from(sig), all);
      verifySignatures(all, h.size, call);
      p2p(h.comm(run, what));
      return;
    }
    const agree = h.nextTag();
    const all = h.agreeBuffer;
    const shared = plan.shared === true;
    const run = h.nextTag();
    sh.beginSync(what, this.attacher(sh, agree, what));
    try {
      SharedCollectives.syncLeak(sh.exchangeWords(sig, all));
      verifySignatures(all, h.size, call);
      if (shared) SharedCollectives.syncLeak(plan.step!());
    } finally {
      sh.endSync();
    }
    if (!shared) p2p(h.comm(run, what));
  }
}
