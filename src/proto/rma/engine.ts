// The one-sided engine: put, get, accumulate, atomics, flush and window locks
// on registered regions. An operation on memory this rank can map (its own,
// another thread's SharedArrayBuffer, a host segment) is done directly with
// Atomics; otherwise it is an active message the target applies on arrival.
// Lanes are ordered, so a FLUSH answered by the target covers everything sent
// to it before; completion is counted per target endpoint. Where the lane's
// rail runs one-sided operations natively (ofi), native.ts issues them.
// The operation itself is op.ts, the replies that complete it pending.ts, and
// the target's side of every operation target.ts.

import type { Rail } from '../../rail/api.js';
import { RailcommError, ErrorCode } from '../../core/errors.js';
import type { ProtoEndpoint } from '../endpoint.js';
import type { AmRegistry } from '../am.js';
import type { Progress } from '../progress.js';
import type { HangWait } from '../hang.js';
import { LockTable } from './locks.js';
import { RegionTable, type Region, type RemoteRegion, type SharedSegments } from './region.js';
import { NativeRma } from './native.js';
import type { ThreadShare } from './thread-share.js';
import { copyElements } from '../../native/copy.js';
import { accumulateElements, applyAtomic, writeValue, TYPE_SIZE, type AnyArray } from './apply.js';
import {
  AM_RMA_ACC, AM_RMA_ATOMIC, AM_RMA_FLUSH, AM_RMA_GET, AM_RMA_GET_DATA, AM_RMA_LOCK, AM_RMA_PUT, AM_RMA_REPLY, AM_RMA_UNLOCK,
  ACC_HDR, ATOMIC_COMPARE, ATOMIC_HDR, ATOMIC_OPERAND, CTRL_HDR, GET_HDR, PUT_HDR,
  encodeAcc, encodeAtomic, encodeCtrl, encodeGet, encodeTarget,
} from './wire.js';
import { emitAm, K_ACC, K_ATOMIC, K_FLUSH, K_GET, K_LOCK, K_PUT, K_UNLOCK, KIND_NAMES, RmaOp } from './op.js';
import { PendingOps } from './pending.js';
import { RmaTarget } from './target.js';

export interface RmaHost {
  readonly worldRank: number;
  /** The open rails (memory is registered with those that run one-sided operations natively). */
  readonly rails?: readonly Rail[];
  endpointFor(world: number): ProtoEndpoint;
  existingEndpoint(world: number): ProtoEndpoint | undefined;
}

/** Marks a rejection handled: the next flush of that target reports the failure too (failedUnflushed). */
const ignore = (): void => { /* reported by the next flush */ };
const RESOLVED: Promise<void> = Promise.resolve();

/**
 * Calls that complete at once (on mapped memory, or a flush with nothing in
 * flight) between two turns of the event loop: a loop that awaits only them
 * (a rank polling a flag in its own window) runs as microtasks, and lock
 * requests and operations of other ranks would never be served. Every
 * YIELD_EVERY-th such call resolves on the next turn instead (setImmediate:
 * the rails' progress and sockets run), as MPI's flush and get drive progress.
 */
const YIELD_EVERY = 1024;
const nextTurn = (resolve: () => void): void => { setImmediate(resolve); };

/** Per target: operations sent that only a FLUSH can confirm, and operations waiting for the lane. */
interface TargetState {
  issued: number;
  flushed: number;
  /** The issued count at the last operation the target runs for us (emulated): only a flush through the target covers it. */
  emulatedTo: number;
  waitingLane: RmaOp[];
}

export class RmaEngine {
  readonly regions = new RegionTable();
  readonly locks = new LockTable();
  /** Named shared-memory segments (native addon), where this build has them. */
  segments: SharedSegments | null = null;
  /** Hands SharedArrayBuffers between thread ranks; made by the first window in a thread job. */
  threadShare: ThreadShare | null = null;
  /** Counted protocol errors from peers (unknown op ids, bad ranges). */
  protocolErrors = 0;
  /** Operations done directly on mapped memory, and through the target. */
  // Doubles from the start (-0 reads as 0): counts that pass 2^31 in a long job
  // would otherwise change representation mid-run and deoptimize the hot paths.
  nativeOps = -0;
  emulatedOps = -0;
  private readonly host: RmaHost;
  readonly progress: Progress;
  /** Operations waiting for replies, by id. */
  private readonly pending = new PendingOps(this);
  private readonly targets = new Map<number, TargetState>();
  private readonly hdr = new Uint8Array(64);
  private readonly hv = new DataView(this.hdr.buffer);
  /** Operations the lane's rail runs natively (ofi), and the order rules beside emulation. */
  readonly native: NativeRma;
  /** Applies and answers the operations other ranks send here. */
  private readonly target: RmaTarget;

  constructor(host: RmaHost, am: AmRegistry, progress: Progress) {
    this.host = host;
    this.progress = progress;
    this.native = new NativeRma((target, op) => {
      const ep = this.host.existingEndpoint(target);
      if (ep === undefined || ep.failure !== null || ep.lane === null) op.fail(ep?.failure ?? new RailcommError(ErrorCode.PEER_FAILED, `rank ${target} is gone`));
      else this.issue(ep, op as RmaOp);
    }, () => { this.nativeOps++; });
    this.regions.onRegister = (r) => NativeRma.register(r, this.host.rails ?? []);
    this.target = new RmaTarget(host, this.regions, this.locks, this);
    const t = this.target;
    am.register(AM_RMA_PUT, 'rma-put', t.putHandler);
    am.register(AM_RMA_ACC, 'rma-acc', t.accHandler);
    am.register(AM_RMA_GET, 'rma-get', t.getHandler);
    am.register(AM_RMA_ATOMIC, 'rma-atomic', t.atomicHandler);
    am.register(AM_RMA_FLUSH, 'rma-flush', t.ctrlHandler(AM_RMA_FLUSH));
    am.register(AM_RMA_LOCK, 'rma-lock', t.ctrlHandler(AM_RMA_LOCK));
    am.register(AM_RMA_UNLOCK, 'rma-unlock', t.ctrlHandler(AM_RMA_UNLOCK));
    am.register(AM_RMA_REPLY, 'rma-reply', this.pending.replyHandler);
    am.register(AM_RMA_GET_DATA, 'rma-get-data', this.pending.getDataHandler);
  }

  // ---- origin side -------------------------------------------------------

  /**
   * A peer known dead: its mapped memory may still be there, but operations
   * on it fail. The rejection is marked handled (the flush that follows
   * reports the failure too, so it never counts as unhandled).
   */
  private deadTarget(target: number): Promise<never> | null {
    // Checked on every operation on mapped memory: no lookup until some peer failed.
    if (this.failedPeers === 0) return null;
    const f = this.host.existingEndpoint(target)?.failure;
    if (!f) return null;
    const dead = Promise.reject(f);
    this.failedQuietly(target, dead);
    return dead;
  }

  /**
   * An operation on target failed because target failed: its rejection is
   * marked handled, and the next flush (or testFlush) of target reports the
   * failure, even with nothing left outstanding there.
   */
  failedQuietly(target: number, p: Promise<unknown>): void {
    p.catch(ignore);
    this.failedUnflushed.add(target);
  }

  /** Targets with operations that failed (their target failed) since target's last flush. */
  private readonly failedUnflushed = new Set<number>();

  /** The failure of an operation on target that no flush reported yet (null: none); `take` clears it. */
  private unflushedFailure(target: number, take: boolean): RailcommError | null {
    if (this.failedUnflushed.size === 0 || !this.failedUnflushed.has(target)) return null;
    if (take) this.failedUnflushed.delete(target);
    return this.host.existingEndpoint(target)?.failure ?? null;
  }

  // put and get on mapped memory are a copy: their bodies stay small (the
  // rest is in putThrough / getThrough) so that V8 inlines them into the
  // window's call; an 8-byte put cost 31 ns before, 17 with everything inline.

  /** Copy src into the target region at offset. Resolves at local completion. */
  put(target: number, rr: RemoteRegion, offset: number, src: Uint8Array): Promise<unknown> {
    const dst = rr.local;
    if (dst === null || this.failedPeers !== 0) return this.putThrough(target, rr, offset, src);
    const n = src.length;
    // A few bytes by a loop here (as get does): the call and TypedArray.set
    // cost more than copying 8 bytes, and a loop shared with get ran slower.
    if (n <= 64) for (let i = 0; i < n; i++) dst[offset + i] = src[i]!;
    else copyElements(dst, offset, src, 0, n);
    this.nativeOps++;
    return RESOLVED;
  }

  /** put through the target (AMs), or to a mapped target that failed. */
  private putThrough(target: number, rr: RemoteRegion, offset: number, src: Uint8Array): Promise<unknown> {
    if (rr.local !== null) {
      const dead = this.deadTarget(target);
      if (dead !== null) return dead;
      rr.local.set(src, offset);
      this.nativeOps++;
      return RESOLVED;
    }
    const op = new RmaOp(this, K_PUT, target, rr.id, offset, src, 0, 0, 0, 0);
    op.rr = rr;
    return this.start(op);
  }

  /** Copy the target region at offset into dst. Resolves once the bytes are here. */
  get(target: number, rr: RemoteRegion, offset: number, dst: Uint8Array): Promise<unknown> {
    const src = rr.local;
    if (src === null || this.failedPeers !== 0) return this.getThrough(target, rr, offset, dst);
    const n = dst.length;
    // A few bytes by a loop: subarray() would allocate a view per call,
    // which costs more than the copy (8-byte get, median: 0.10-0.11 -> 0.08-0.09 us).
    if (n <= 64) for (let i = 0; i < n; i++) dst[i] = src[offset + i]!;
    else copyElements(dst, 0, src, offset, n);
    this.nativeOps++;
    return ++this.atOnce < YIELD_EVERY ? RESOLVED : this.yieldTurn();
  }

  /** Calls completed at once since the last yield (YIELD_EVERY). */
  private atOnce = 0;

  /** A promise for the next turn of the event loop (the count starts again). */
  private yieldTurn(): Promise<void> {
    this.atOnce = 0;
    return new Promise<void>(nextTurn);
  }

  /** get through the target (AMs), or from a mapped target that failed. */
  private getThrough(target: number, rr: RemoteRegion, offset: number, dst: Uint8Array): Promise<unknown> {
    if (rr.local !== null) {
      const dead = this.deadTarget(target);
      if (dead !== null) return dead;
      dst.set(rr.local.subarray(offset, offset + dst.byteLength));
      this.nativeOps++;
      return RESOLVED;
    }
    if (dst.byteLength === 0) return RESOLVED;
    const op = new RmaOp(this, K_GET, target, rr.id, offset, dst, 0, 0, 0, 0);
    op.rr = rr;
    return this.start(op);
  }

  /**
   * target[offset + i] = target[offset + i] op elements[i], atomically per
   * element (src: the same elements as bytes, for the wire).
   */
  accumulate(target: number, rr: RemoteRegion, offset: number, elements: AnyArray, type: number, op: number): Promise<unknown> {
    if (rr.local !== null) {
      const dead = this.deadTarget(target);
      if (dead !== null) return dead;
      accumulateElements(rr.local, offset, elements, type, op);
      this.nativeOps++;
      return RESOLVED;
    }
    const src = new Uint8Array(elements.buffer, elements.byteOffset, elements.byteLength);
    const o = new RmaOp(this, K_ACC, target, rr.id, offset, src, type, op, 0, 0);
    o.rr = rr;
    return this.start(o);
  }

  /** Fetch-and-op (op) or compare-and-swap (OP_CSWAP) on one element; resolves to the old value. */
  atomic(target: number, rr: RemoteRegion, offset: number, type: number, op: number, operand: number | bigint, compare: number | bigint): Promise<number | bigint> {
    if (rr.local !== null) {
      const dead = this.deadTarget(target);
      if (dead !== null) return dead;
      this.nativeOps++;
      const old = applyAtomic(rr.local, offset, type, op, operand, compare);
      return ++this.atOnce < YIELD_EVERY ? Promise.resolve(old) : this.yieldTurn().then(() => old);
    }
    const o = new RmaOp(this, K_ATOMIC, target, rr.id, offset, EMPTY, type, op, operand, compare);
    o.rr = rr;
    return this.start(o);
  }

  /**
   * Whether every operation this rank issued to target so far is complete
   * there, without waiting or sending anything: true on mapped memory (each
   * operation completed at its call), and through the target once a flush
   * confirmed them. Throws when operations on target failed since its last
   * flush because target failed (that flush will reject too).
   */
  flushedNow(target: number): boolean {
    this.lookNative(target);
    // Left for the flush to report as well (testing does not take it).
    const f = this.unflushedFailure(target, false);
    if (f !== null) throw f;
    if (this.targets.size === 0) return true;
    const t = this.targets.get(target);
    return t === undefined || t.flushed >= t.issued;
  }

  /**
   * Before a flush or its test: when everything issued to target since its
   * last completed flush ran natively, the rail is polled once (a completion
   * already in its queue is seen: libfabric's shm writes and reads by
   * cross-memory attach complete within the call), and if none is in flight
   * and none failed, it all counts as flushed, with nothing to ask the target
   * (a native operation completes only once it is complete there, native.ts).
   * A failure the poll read is left for the flush to report.
   */
  private lookNative(target: number): void {
    const t = this.targets.get(target);
    // (Operations issued since the last flush are each native, emulated or waiting for the lane.)
    if (t === undefined || t.flushed >= t.issued || t.flushed < t.emulatedTo || t.waitingLane.length > 0) return;
    const rail = this.host.existingEndpoint(target)?.lane?.rail;
    if (rail === undefined || rail.poll === undefined) return;
    rail.poll();
    if (this.native.idle(target) && !this.failedUnflushed.has(target)) t.flushed = t.issued;
  }

  /** Every operation this rank issued to target so far is complete there. */
  flush(target: number): Promise<unknown> {
    this.lookNative(target);
    // Operations on target failed since the last flush (target failed): so does this flush.
    const failed = this.unflushedFailure(target, true);
    if (failed !== null) return Promise.reject(failed);
    // Only operations on mapped memory so far: nothing can be outstanding (no lookup).
    if (this.targets.size === 0) return ++this.atOnce < YIELD_EVERY ? RESOLVED : this.yieldTurn();
    const t = this.targets.get(target);
    if (t === undefined || t.flushed >= t.issued) return ++this.atOnce < YIELD_EVERY ? RESOLVED : this.yieldTurn();
    const op = new RmaOp(this, K_FLUSH, target, 0, 0, EMPTY, 0, 0, 0, 0);
    op.mark = t.issued;
    op.accMark = this.native.accMark(target);
    return this.start(op);
  }

  /**
   * Every operation issued so far over one rail is complete at its targets
   * (the per-rail flush: all targets whose lane is that rail); with no rail,
   * over every rail. Operations that went straight to mapped memory are
   * complete already.
   */
  flushRail(rail: string | null): Promise<unknown> {
    const waits: Array<Promise<unknown>> = [];
    for (const target of this.targets.keys()) {
      if (rail !== null && this.host.existingEndpoint(target)?.lane?.rail.name !== rail) continue;
      const w = this.flush(target);
      if (w !== RESOLVED) waits.push(w);
    }
    return waits.length === 0 ? RESOLVED : Promise.all(waits);
  }

  /** Wait until the target grants its lock on the region (mode: LOCK_EXCLUSIVE / LOCK_SHARED). */
  lock(target: number, region: number, mode: number): Promise<unknown> {
    return this.start(new RmaOp(this, K_LOCK, target, region, 0, EMPTY, 0, mode, 0, 0));
  }

  /** Release the lock; resolves once every earlier operation to target is complete there. */
  unlock(target: number, region: number): Promise<unknown> {
    const op = new RmaOp(this, K_UNLOCK, target, region, 0, EMPTY, 0, 0, 0, 0);
    op.mark = this.state(target).issued;
    op.accMark = this.native.accMark(target);
    return this.start(op);
  }

  private state(target: number): TargetState {
    let t = this.targets.get(target);
    if (t === undefined) { t = { issued: 0, flushed: 0, emulatedTo: 0, waitingLane: [] }; this.targets.set(target, t); }
    return t;
  }

  private start<T>(op: RmaOp): Promise<T> {
    this.progress.hold();
    const ep = this.host.endpointFor(op.target);
    if (ep.failure !== null) { op.fail(ep.failure); return op.promise as Promise<T>; }
    const t = this.state(op.target);
    // Counted when started, not when issued: a flush must cover operations still waiting for the lane.
    // A data operation's mark is its place in that count (emulatedTo).
    if (op.kind <= K_ATOMIC) op.mark = ++t.issued;
    if (ep.lane === null) t.waitingLane.push(op);
    else this.issue(ep, op);
    // Complete at the target already, and so is everything before it: flushed (no poll at the next flush).
    if (op.landed) {
      if (t.flushed === op.mark - 1 && (this.failedUnflushed.size === 0 || !this.failedUnflushed.has(op.target))) t.flushed = op.mark;
      // (A put or get: nothing to hand back; no promise was made.)
      if (op.settled && !op.failed) return RESOLVED as Promise<T>;
    }
    return op.promise as Promise<T>;
  }

  /** The protocol endpoint to this peer got its lane: issue what waited for it. */
  laneReady(ep: ProtoEndpoint): void {
    const t = this.targets.get(ep.rank);
    if (t === undefined || t.waitingLane.length === 0) return;
    const w = t.waitingLane;
    t.waitingLane = [];
    for (const op of w) if (!op.settled) this.issue(ep, op);
  }

  private issue(ep: ProtoEndpoint, op: RmaOp): void {
    const lane = ep.lane!;
    if (this.native.intercept(lane, op)) return;
    this.native.emulated(op);
    if (op.kind <= K_ATOMIC) { const t = this.state(op.target); if (op.mark > t.emulatedTo) t.emulatedTo = op.mark; }
    const caps = lane.rail.caps;
    this.emulatedOps++;
    const v = this.hv;
    switch (op.kind) {
      case K_PUT:
      case K_ACC: {
        const src = op.bytes;
        const elem = op.kind === K_ACC ? TYPE_SIZE[op.type]! : 1;
        let piece = Math.max(elem, Math.min(caps.amZcopyMax, 1 << 20));
        piece -= piece % elem;
        // An accumulate is applied from a copy (the target must align it anyway).
        if (op.kind === K_ACC) piece = Math.max(elem, Math.min(piece, caps.amCopyMax - (caps.amCopyMax % elem)));
        let off = 0;
        do {
          const n = Math.min(piece, src.byteLength - off);
          if (op.kind === K_PUT) { encodeTarget(v, op.region, op.offset + off); v.setUint32(12, 0, true); }
          else encodeAcc(v, op.region, op.offset + off, op.code, op.type);
          emitAm(ep, op.kind === K_PUT ? AM_RMA_PUT : AM_RMA_ACC, this.hdr, op.kind === K_PUT ? PUT_HDR : ACC_HDR,
            n > 0 ? src.subarray(off, off + n) : null, op, op.kind === K_ACC || n <= Math.min(caps.amCopyMax, 65536));
          off += n;
          if (op.settled) return;
        } while (off < src.byteLength);
        break;
      }
      case K_GET:
        op.id = this.pending.track(op);
        op.awaiting = op.bytes.byteLength;
        encodeGet(v, op.region, op.offset, op.id, op.bytes.byteLength);
        emitAm(ep, AM_RMA_GET, this.hdr, GET_HDR, null, op, true);
        break;
      case K_ATOMIC:
        op.id = this.pending.track(op);
        op.awaiting = 1;
        encodeAtomic(v, op.region, op.offset, op.id, op.code, op.type);
        writeValue(v, ATOMIC_OPERAND, op.type, op.operand);
        writeValue(v, ATOMIC_COMPARE, op.type, op.compare);
        emitAm(ep, AM_RMA_ATOMIC, this.hdr, ATOMIC_HDR, null, op, true);
        break;
      default:
        op.id = this.pending.track(op);
        op.awaiting = 1;
        encodeCtrl(v, op.region, op.id, op.code);
        emitAm(ep, op.kind === K_FLUSH ? AM_RMA_FLUSH : op.kind === K_LOCK ? AM_RMA_LOCK : AM_RMA_UNLOCK, this.hdr, CTRL_HDR, null, op, true);
    }
    op.issued = true;
    op.check();
  }

  /** A FLUSH or UNLOCK finished: everything issued to its target before it is complete there. */
  flushFinished(op: RmaOp): void {
    const t = this.state(op.target);
    if (op.mark > t.flushed) t.flushed = op.mark;
    this.native.flushed(op.target, op.accMark);
  }

  /** Called by an op once it settled. */
  settled(op: RmaOp): void {
    this.pending.drop(op);
    this.progress.release();
  }

  /**
   * A window is freed here: its region goes, and lock requests still queued
   * on it are answered with an error rather than left waiting forever.
   */
  deregister(region: Region): void {
    this.target.deregister(region);
  }

  // ---- failures ----------------------------------------------------------

  /** Peers that failed so far (operations on mapped memory look them up only then). */
  private failedPeers = 0;

  /** The peer is gone: its operations fail, and it no longer holds or waits for locks here. */
  peerFailed(ep: ProtoEndpoint, err: RailcommError): void {
    this.failedPeers++;
    const t = this.targets.get(ep.rank);
    if (t !== undefined) {
      for (const op of t.waitingLane) op.fail(err);
      t.waitingLane = [];
    }
    for (const op of [...this.pending.values()]) if (op.target === ep.rank) op.fail(err);
    this.native.peerFailed(ep.rank, err);
    this.target.peerFailed(ep.rank);
  }

  /** Whether an operation to the peer waits (rails' keepalive checks; rare). */
  waitsOn(ep: ProtoEndpoint): boolean {
    const t = this.targets.get(ep.rank);
    if (t !== undefined && t.waitingLane.length > 0) return true;
    for (const op of this.pending.values()) if (op.target === ep.rank) return true;
    return this.native.waitsOn(ep.rank);
  }

  /** Operations still waiting, with their target's world rank (hang report). */
  waits(out: HangWait[]): void {
    for (const op of this.pending.values()) out.push({ peer: op.target, what: `one-sided ${KIND_NAMES[op.kind]} to world rank ${op.target} (op ${op.id}, awaiting ${op.awaiting})` });
    for (const what of this.native.describe()) {
      const m = /to rank (\d+)/.exec(what);
      out.push({ peer: m === null ? null : Number(m[1]), what });
    }
  }
}

const EMPTY = new Uint8Array(0);
